"""The KDD Cup 1999 data (10% sample), shipped gzip-compressed inside the package."""

import functools
import gzip
import math
import numbers
import os
import types
import warnings
from collections.abc import Collection, Sequence
from typing import Any, Literal, overload

import numpy as np

from ..data.norms import project_rows
from ..data.validation import check_random_state
from ..exceptions import PrivacyLeakWarning
from ._adult import Bunch, DataChecksumError, encode_public, read_shipped

__all__ = [
    "KDDCUP99_COLUMNS",
    "KDDCUP99_NUMERIC_COLUMNS",
    "KDDCUP99_SYMBOLIC_COLUMNS",
    "KDDCUP99_PUBLIC_BOUNDS",
    "KDDCUP99_PUBLIC_CATEGORIES",
    "KDDCUP99_DOS_LABELS",
    "KDDCUP99_ATTACK_CATEGORIES",
    "KDDCUP99_FIVE_CLASS_NAMES",
    "load_kddcup99",
]

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

_FILE = "kddcup.data_10_percent.gz"
# SHA-256 of the shipped .gz file as distributed (also in data/README.txt).
_SHA256 = {_FILE: "8045aca0d84e70e622d1148d7df782496f6333bf6eb979a1b0837c42a9fd9561"}
_N_ROWS = 494021

KDDCUP99_COLUMNS = (
    "duration", "protocol_type", "service", "flag", "src_bytes", "dst_bytes", "land",
    "wrong_fragment", "urgent", "hot", "num_failed_logins", "logged_in", "num_compromised",
    "root_shell", "su_attempted", "num_root", "num_file_creations", "num_shells",
    "num_access_files", "num_outbound_cmds", "is_host_login", "is_guest_login", "count",
    "srv_count", "serror_rate", "srv_serror_rate", "rerror_rate", "srv_rerror_rate",
    "same_srv_rate", "diff_srv_rate", "srv_diff_host_rate", "dst_host_count",
    "dst_host_srv_count", "dst_host_same_srv_rate", "dst_host_diff_srv_rate",
    "dst_host_same_src_port_rate", "dst_host_srv_diff_host_rate", "dst_host_serror_rate",
    "dst_host_srv_serror_rate", "dst_host_rerror_rate", "dst_host_srv_rerror_rate",
)
# The original description also marks land, logged_in, is_host_login and
# is_guest_login as symbolic; they are 0/1 flags and are treated as numeric in [0, 1].
KDDCUP99_SYMBOLIC_COLUMNS = ("protocol_type", "service", "flag")
KDDCUP99_NUMERIC_COLUMNS = tuple(c for c in KDDCUP99_COLUMNS if c not in KDDCUP99_SYMBOLIC_COLUMNS)
_LABEL = "label"

# Labels of the denial-of-service attacks (the negative class, y = -1).
KDDCUP99_DOS_LABELS = ("back", "land", "neptune", "pod", "smurf", "teardrop")

# The five classes of target="five_class", in the order of their codes y = 0..4.
KDDCUP99_FIVE_CLASS_NAMES = ("normal", "dos", "probe", "r2l", "u2r")

# The standard KDD Cup 99 attack taxonomy (the task description's
# "training_attack_types" file): each of the 23 labels of the 10% sample
# (normal and 22 attacks) -> its category. Public: it is part of the task, not
# read from the data. DoS: denial of service; probe: surveillance and probing;
# r2l: unauthorized access from a remote machine; u2r: unauthorized access to
# local superuser (root) privileges.
KDDCUP99_ATTACK_CATEGORIES = types.MappingProxyType({
    "normal": "normal",
    **{s: "dos" for s in KDDCUP99_DOS_LABELS},
    **{s: "probe" for s in ("ipsweep", "nmap", "portsweep", "satan")},
    **{s: "r2l" for s in ("ftp_write", "guess_passwd", "imap", "multihop", "phf", "spy",
                          "warezclient", "warezmaster")},
    **{s: "u2r" for s in ("buffer_overflow", "loadmodule", "perl", "rootkit")},
})
assert set(KDDCUP99_ATTACK_CATEGORIES.values()) == set(KDDCUP99_FIVE_CLASS_NAMES)


def _five_class_codes(label_levels: Sequence[str]) -> np.ndarray:
    """y in 0..4 (:data:`KDDCUP99_FIVE_CLASS_NAMES`) of each label level; a label
    that is not in :data:`KDDCUP99_ATTACK_CATEGORIES` raises (never guessed)."""
    unknown = [s for s in label_levels if s not in KDDCUP99_ATTACK_CATEGORIES]
    if unknown:
        raise DataChecksumError(
            f"KDD Cup 99 label(s) {unknown} are not in KDDCUP99_ATTACK_CATEGORIES: "
            "target='five_class' cannot place them in a category")
    code = {c: k for k, c in enumerate(KDDCUP99_FIVE_CLASS_NAMES)}
    return np.array([code[KDDCUP99_ATTACK_CATEGORIES[s]] for s in label_levels],
                    dtype=np.int64)

_RATES = (
    "serror_rate", "srv_serror_rate", "rerror_rate", "srv_rerror_rate", "same_srv_rate",
    "diff_srv_rate", "srv_diff_host_rate", "dst_host_same_srv_rate", "dst_host_diff_srv_rate",
    "dst_host_same_src_port_rate", "dst_host_srv_diff_host_rate", "dst_host_serror_rate",
    "dst_host_srv_serror_rate", "dst_host_rerror_rate", "dst_host_srv_rerror_rate",
)
_FLAGS = ("land", "logged_in", "root_shell", "su_attempted", "is_host_login", "is_guest_login")
_EVENT_COUNTS = (
    "wrong_fragment", "urgent", "hot", "num_failed_logins", "num_compromised", "num_root",
    "num_file_creations", "num_shells", "num_access_files", "num_outbound_cmds",
)
# Columns without a natural cap: mapped v -> min(log1p(v), log1p(B)) / log1p(B).
_LOG_SCALED = ("duration", "src_bytes", "dst_bytes") + _EVENT_COUNTS

# Public upper bounds B of the numeric columns, in the units of the file. They
# come from the definitions of the attributes (KDD Cup 99 task description) or
# are round public choices; none is computed from the data.
#   rates (*_rate):           fractions, in [0, 1] by definition -> 1.
#   0/1 flags:                land, logged_in, root_shell, is_host_login,
#                             is_guest_login -> 1; su_attempted is defined as
#                             "1 if su root attempted, 0 otherwise" -> 1 (the
#                             few 2s of the file are clipped to 1).
#   count, srv_count:         connections in the past 2 seconds, capped at 511
#                             by the feature construction -> 511.
#   dst_host_count,
#   dst_host_srv_count:       capped at 255 by the feature construction -> 255.
#   duration:                 seconds, no natural cap; a public choice of one
#                             day (86,400 s), log scale.
#   src_bytes, dst_bytes:     bytes, no natural cap; a public choice of 1e9
#                             bytes (1 GB), log scale.
#   wrong_fragment, urgent, hot, num_* (event counts within one connection):
#                             no natural cap; a public choice of 1000, log scale.
# Log-scaled columns (``_LOG_SCALED``) map v -> min(log1p(v), log1p(B)) / log1p(B);
# the others v -> min(v, B) / B.
_DURATION_BOUND = 86400.0
_BYTES_BOUND = 1e9
_EVENT_BOUND = 1000.0
KDDCUP99_PUBLIC_BOUNDS = types.MappingProxyType({
    c: (
        _DURATION_BOUND if c == "duration"
        else _BYTES_BOUND if c in ("src_bytes", "dst_bytes")
        else _EVENT_BOUND if c in _EVENT_COUNTS
        else 1.0 if c in _RATES or c in _FLAGS
        else 511.0 if c in ("count", "srv_count")
        else 255.0 if c in ("dst_host_count", "dst_host_srv_count")
        else None
    )
    for c in KDDCUP99_NUMERIC_COLUMNS
})
assert None not in KDDCUP99_PUBLIC_BOUNDS.values()

# Public category lists of the symbolic columns. protocol_type and flag (the
# TCP connection status flags) as in the KDD Cup 99 task description; service:
# the 70 network services of the full KDD Cup 99 data (the same list as the
# ARFF header of NSL-KDD). aol, harvest, http_2784 and http_8001 do not occur in
# the 10% sample, so their one-hot columns are zero here.
KDDCUP99_PUBLIC_CATEGORIES = types.MappingProxyType({
    "protocol_type": ("tcp", "udp", "icmp"),
    "service": (
        "aol", "auth", "bgp", "courier", "csnet_ns", "ctf", "daytime", "discard", "domain",
        "domain_u", "echo", "eco_i", "ecr_i", "efs", "exec", "finger", "ftp", "ftp_data",
        "gopher", "harvest", "hostnames", "http", "http_2784", "http_443", "http_8001",
        "imap4", "IRC", "iso_tsap", "klogin", "kshell", "ldap", "link", "login", "mtp",
        "name", "netbios_dgm", "netbios_ns", "netbios_ssn", "netstat", "nnsp", "nntp",
        "ntp_u", "other", "pm_dump", "pop_2", "pop_3", "printer", "private", "red_i",
        "remote_job", "rje", "shell", "smtp", "sql_net", "ssh", "sunrpc", "supdup",
        "systat", "telnet", "tftp_u", "tim_i", "time", "urh_i", "urp_i", "uucp",
        "uucp_path", "vmnet", "whois", "X11", "Z39_50",
    ),
    "flag": ("OTH", "REJ", "RSTO", "RSTOS0", "RSTR", "S0", "S1", "S2", "S3", "SF", "SH"),
})


def _read_verified(data_dir: str) -> bytes:
    """Read the shipped .gz, check its SHA-256 (of the .gz, as published) and return the
    decompressed bytes."""
    return read_shipped(os.path.join(data_dir, _FILE), _SHA256[_FILE], gzip.decompress,
                        checksum_of_packed=True)


def _parse(raw: bytes) -> tuple[Any, ...]:
    """Parse the file; duplicate lines (about 70% of them) are parsed once.

    Returns the numeric columns and symbolic codes of the distinct lines, and
    for each line of the file the index of its distinct line.
    """
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    n = len(lines)
    distinct: dict[bytes, int] = {}
    inv = np.fromiter(   # (the default argument binds setdefault locally: mypy cannot type it)
        map(lambda ln, put=distinct.setdefault: put(ln, len(distinct)), lines),  # type: ignore[misc]
        dtype=np.intp, count=n,
    )
    del lines
    m = len(distinct)
    buf = np.frombuffer(b"\n".join(distinct) + b"\n", dtype=np.uint8)
    del distinct
    ncol = len(KDDCUP99_COLUMNS) + 1
    seps = np.flatnonzero((buf == ord(",")) | (buf == ord("\n")))
    if seps.size != ncol * m or np.any(buf[seps[ncol - 1::ncol]] != ord("\n")):
        raise DataChecksumError(f"malformed KDD Cup 99 file: expected {ncol} fields per line")
    ends = seps.reshape(m, ncol)
    starts = np.empty_like(ends)
    starts.reshape(-1)[0] = 0
    starts.reshape(-1)[1:] = seps[:-1] + 1
    del seps

    def chars(j: int, width: int, right: bool) -> np.ndarray:
        """(m, width) bytes of field j, left- or right-aligned, 0 outside the field."""
        s, e = starts[:, j], ends[:, j]
        idx = (e[:, None] - width if right else s[:, None]) + np.arange(width)
        inside = (idx >= s[:, None]) & (idx < e[:, None])
        return np.where(inside, buf[np.clip(idx, 0, buf.size - 1)], 0).astype(np.uint8)

    numeric = np.empty((m, len(KDDCUP99_NUMERIC_COLUMNS)), dtype=np.float64)
    for k, c in enumerate(KDDCUP99_NUMERIC_COLUMNS):
        j = KDDCUP99_COLUMNS.index(c)
        lens = ends[:, j] - starts[:, j]
        if c in _RATES:
            # Two decimals, "d.dd": the value is an integer number of hundredths,
            # and n / 100 is the double nearest to the decimal, like float("d.dd").
            ch = chars(j, 4, False).astype(np.int64) - ord("0")
            ok = np.all(lens == 4) and np.all(ch[:, 1] == ord(".") - ord("0"))
            ok = ok and np.all((ch[:, [0, 2, 3]] >= 0) & (ch[:, [0, 2, 3]] <= 9))
            numeric[:, k] = (100 * ch[:, 0] + 10 * ch[:, 2] + ch[:, 3]) / 100.0
        else:
            width = int(lens.max())
            ok = np.all(lens >= 1) and width <= 15
            if ok:
                ch = chars(j, width, True)
                digit = ch.astype(np.int64) - ord("0")
                ok = np.all((ch == 0) | ((digit >= 0) & (digit <= 9)))
                digit[ch == 0] = 0
                numeric[:, k] = digit @ (10 ** np.arange(width - 1, -1, -1, dtype=np.int64))
        if not ok:
            raise DataChecksumError(f"malformed KDD Cup 99 file: column {c!r}")
    codes, levels = [], []
    for j in [KDDCUP99_COLUMNS.index(c) for c in KDDCUP99_SYMBOLIC_COLUMNS] + [ncol - 1]:
        width = int((ends[:, j] - starts[:, j]).max())
        strings = np.ascontiguousarray(chars(j, width, False)).view(f"S{width}").reshape(-1)
        lev, code = np.unique(strings, return_inverse=True)
        levels.append(tuple(s.decode("ascii") for s in lev))
        codes.append(code.reshape(-1).astype(np.intp))
    label_levels = levels.pop()
    if not all(s.endswith(".") for s in label_levels):
        raise DataChecksumError("malformed KDD Cup 99 file: labels must end with a dot")
    label_levels = tuple(s[:-1] for s in label_levels)
    return numeric, np.column_stack(codes[:-1]), tuple(levels), codes[-1], label_levels, inv


@functools.lru_cache(maxsize=2)
def _table(data_dir: str) -> types.SimpleNamespace:
    """Parse the shipped file once into read-only arrays (cached per data_dir)."""
    numeric, codes, levels, label_codes, label_levels, inv = _parse(_read_verified(data_dir))
    if inv.size != _N_ROWS:
        raise DataChecksumError(f"malformed KDD Cup 99 file: {inv.size} rows, expected {_N_ROWS}")
    sign = np.array([-1 if s in KDDCUP99_DOS_LABELS else 1 for s in label_levels], dtype=np.int64)
    for a in (numeric, codes, label_codes, inv):
        a.setflags(write=False)
    return types.SimpleNamespace(
        numeric=numeric,            # (m, 38) of the m distinct lines
        codes=codes,                # (m, 3) codes into levels (sorted)
        levels=levels,
        label_codes=label_codes,    # (m,) codes into label_levels
        label_levels=label_levels,
        sign=sign,                  # y of each label level
        inv=inv,                    # (n,) distinct line of each line of the file
    )


def _project_rows(X: np.ndarray) -> None:
    """In place: rows with norm > 1 go onto the unit sphere, every norm <= 1 whatever
    the rounding of the caller's norm computation (dperm.data.norms.project_rows)."""
    project_rows(X, "each", 1.0)


def _one_hot(codes: np.ndarray, levels: Sequence[str], categories: Sequence[str]) -> np.ndarray:
    pos = {c: k for k, c in enumerate(categories)}
    k = np.array([pos.get(lev, -1) for lev in levels], dtype=np.intp)[codes]
    out = np.zeros((codes.size, len(categories)), dtype=np.float64)
    hit = np.flatnonzero(k >= 0)
    out[hit, k[hit]] = 1.0
    return out


@functools.lru_cache(maxsize=2)
def _encoded(preprocess: str, data_dir: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """Encoded distinct lines (read-only, cached) and feature names."""
    tab = _table(data_dir)
    if preprocess == "public":
        columns = {}
        bounds = {}
        for k, c in enumerate(KDDCUP99_NUMERIC_COLUMNS):
            b = KDDCUP99_PUBLIC_BOUNDS[c]
            assert b is not None      # every numeric column has one (checked at import)
            if c in _LOG_SCALED:
                columns[c], bounds[c] = np.log1p(np.maximum(tab.numeric[:, k], 0.0)), math.log1p(b)
            else:
                columns[c], bounds[c] = tab.numeric[:, k], b
        for j, c in enumerate(KDDCUP99_SYMBOLIC_COLUMNS):
            columns[c] = np.asarray(tab.levels[j])[tab.codes[:, j]]
        X, names = encode_public(columns, bounds, KDDCUP99_PUBLIC_CATEGORIES)
    else:
        # The paper's steps; categories and column maxima of the whole file
        # (the maxima over distinct lines are the maxima over all lines).
        blocks = [tab.numeric]
        names = list(KDDCUP99_NUMERIC_COLUMNS)
        for j, c in enumerate(KDDCUP99_SYMBOLIC_COLUMNS):
            present = set(tab.levels[j])
            listed = KDDCUP99_PUBLIC_CATEGORIES[c]
            cats = [s for s in listed if s in present] + sorted(present - set(listed))
            blocks.append(_one_hot(tab.codes[:, j], tab.levels[j], cats))
            names += [f"{c}={s}" for s in cats]
        X = np.hstack(blocks)
        colmax = X.max(axis=0)
        colmax[colmax == 0] = 1.0  # all-zero columns stay zero
        X /= colmax
        _project_rows(X)
    X = np.ascontiguousarray(X, dtype=np.float64)
    X.setflags(write=False)
    return X, tuple(names)


def _frame(tab: types.SimpleNamespace, rows: np.ndarray) -> np.ndarray:
    """Raw rows as a numpy structured array (strings for symbolic columns)."""
    dtype: list[tuple[str, Any]] = []
    for c in KDDCUP99_COLUMNS:
        if c in KDDCUP99_SYMBOLIC_COLUMNS:
            j = KDDCUP99_SYMBOLIC_COLUMNS.index(c)
            dtype.append((c, f"U{max(len(s) for s in tab.levels[j])}"))
        else:
            dtype.append((c, np.float64))
    dtype.append((_LABEL, f"U{max(len(s) for s in tab.label_levels)}"))
    u = tab.inv[rows]
    out = np.empty(rows.size, dtype=dtype)
    for k, c in enumerate(KDDCUP99_NUMERIC_COLUMNS):
        out[c] = tab.numeric[u, k]
    for j, c in enumerate(KDDCUP99_SYMBOLIC_COLUMNS):
        out[c] = np.asarray(tab.levels[j])[tab.codes[u, j]]
    out[_LABEL] = np.asarray(tab.label_levels)[tab.label_codes[u]]
    return out


def _check_choice(name: str, value: Any, choices: Collection[str]) -> None:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")


@overload
def load_kddcup99(preprocess: str = ...,
                  return_frame: Literal[False] = ...,
                  *,
                  n_samples: int | None = ...,
                  random_state: int | np.random.Generator | None = ...,
                  target: str = ...,
                  return_feature_names: Literal[False] = ...) -> tuple[np.ndarray, np.ndarray]: ...


@overload
def load_kddcup99(preprocess: str = ...,
                  return_frame: Literal[False] = ...,
                  *,
                  n_samples: int | None = ...,
                  random_state: int | np.random.Generator | None = ...,
                  target: str = ...,
                  return_feature_names: Literal[True]) -> tuple[np.ndarray, np.ndarray, list[str]]: ...


@overload
def load_kddcup99(preprocess: str,
                  return_frame: Literal[True],
                  *,
                  n_samples: int | None = ...,
                  random_state: int | np.random.Generator | None = ...,
                  target: str = ...,
                  return_feature_names: bool = ...) -> Bunch: ...


@overload
def load_kddcup99(preprocess: str = ...,
                  *,
                  return_frame: Literal[True],
                  n_samples: int | None = ...,
                  random_state: int | np.random.Generator | None = ...,
                  target: str = ...,
                  return_feature_names: bool = ...) -> Bunch: ...


@overload
def load_kddcup99(preprocess: str = ...,
                  return_frame: bool = ...,
                  *,
                  n_samples: int | None = ...,
                  random_state: int | np.random.Generator | None = ...,
                  target: str = ...,
                  return_feature_names: bool = ...) -> tuple[Any, ...] | Bunch: ...


def load_kddcup99(
    preprocess: str = "public",
    return_frame: bool = False,
    *,
    n_samples: int | None = None,
    random_state: int | np.random.Generator | None = None,
    return_feature_names: bool = False,
    target: str = "dos",
) -> tuple[Any, ...] | Bunch:
    """Load the KDD Cup 1999 data, 10% sample (shipped with dperm), as X, y.

    The file kddcup.data_10_percent.gz (Stolfo et al. 1999, UCI KDD Archive /
    UCI Machine Learning Repository, CC BY 4.0; see
    ``dperm/datasets/data/README.txt``; 494,021 connections, 41 attributes)
    is checked against its SHA-256 (a mismatch raises
    :class:`DataChecksumError`) and parsed once per process (about 1.5 s);
    every call returns fresh copies.

    The task is the paper's (Chaudhuri, Monteleoni & Sarwate 2011, Section
    7): y = -1 for a denial-of-service attack (labels
    :data:`KDDCUP99_DOS_LABELS`: back, land, neptune, pod, smurf, teardrop),
    y = +1 otherwise (normal traffic and every other attack); 102,563 rows
    (20.76%) are positive.

    Parameters
    ----------
    preprocess : {"public", "paper"}
        ``"public"`` (default): PUBLIC bounds and category lists only
        (:data:`KDDCUP99_PUBLIC_BOUNDS`, :data:`KDDCUP99_PUBLIC_CATEGORIES`),
        safe for private training. Each numeric column is mapped to [0, 1] by
        a public bound B taken from the attribute's definition, never from
        the data: rates are fractions (B = 1); land, logged_in, root_shell,
        su_attempted, is_host_login, is_guest_login are 0/1 flags (B = 1;
        su_attempted's few 2s are clipped); count and srv_count (2-second
        window) are capped at 511 by their construction, dst_host_count and
        dst_host_srv_count at 255; these give ``min(v, B) / B``. Columns with
        no natural cap use a clipped log scale ``min(log1p(v), log1p(B)) /
        log1p(B)``: duration (B = 86,400 s, one day), src_bytes and dst_bytes
        (B = 1e9 bytes), and the per-connection event counts wrong_fragment,
        urgent, hot, num_failed_logins, num_compromised, num_root,
        num_file_creations, num_shells, num_access_files, num_outbound_cmds
        (B = 1000). protocol_type (3), service (70: the services of the full
        KDD Cup 99 data, 4 of which do not occur in this sample) and flag
        (11 TCP connection flags) are one-hot encoded against the public
        lists (a value not in a list gives an all-zero group). Rows are then
        divided by sqrt(41) (38 numeric columns + 3 groups), so every row norm
        is <= 1. Done by :func:`dperm.datasets.encode_public`; each row is
        mapped on its own. d = 122.

        ``"paper"``: the paper's preprocessing: one-hot encode the symbolic
        attributes with the categories present in the file (3 protocols, 66
        services, 11 flags), divide every column by its maximum in the file
        (the two all-zero columns of this sample, num_outbound_cmds and
        is_host_login, are kept as zeros), then project rows with norm > 1
        onto the unit sphere (every row: the three one-hot groups alone give
        norm sqrt(3)). d = 118 (the paper reports 119 for the full data).
        Categories and maxima are computed on all 494,021 rows, whatever
        ``n_samples``, so subsets share columns. They are READ FROM THE DATA:
        not differentially private; a
        :class:`~dperm.exceptions.PrivacyLeakWarning` is emitted.
    return_frame : bool
        If True return a :class:`Bunch` with ``data`` (X), ``target`` (y),
        ``feature_names``, ``frame`` (the raw rows as a numpy structured array
        with the 41 attributes and ``label``, the attack name without its
        dot, e.g. "smurf" or "normal"), ``row_indices`` (the 0-based line in
        the file of each row) and the options used.
    n_samples : int or None
        None: all 494,021 rows in file order. An int: a uniformly random
        subset of that many distinct rows (without replacement; 1 <= n_samples
        <= 494,021), in the order drawn (a random order). The paper uses
        random subsets of 70,000 rows.
    random_state : None, int or numpy.random.Generator
        Seed or generator for the subset (only with ``n_samples``).
    return_feature_names : bool
        If True (and ``return_frame`` is False) return ``(X, y, feature_names)``.
    target : {"dos", "five_class"}
        ``"dos"`` (default): the paper's binary task, y = -1 for a DoS attack,
        +1 otherwise (as described above).
        ``"five_class"``: the standard KDD Cup 99 five-class task, y in
        {0: normal, 1: DoS, 2: probe, 3: R2L, 4: U2R}
        (:data:`KDDCUP99_FIVE_CLASS_NAMES`), each label placed by the public
        attack taxonomy :data:`KDDCUP99_ATTACK_CATEGORIES` (DoS: back, land,
        neptune, pod, smurf, teardrop; probe: ipsweep, nmap, portsweep, satan;
        R2L: ftp_write, guess_passwd, imap, multihop, phf, spy, warezclient,
        warezmaster; U2R: buffer_overflow, loadmodule, perl, rootkit). A label
        not in the mapping raises :class:`DataChecksumError`. Counts in the
        file: 97,278 normal, 391,458 DoS, 4,107 probe, 1,126 R2L, 52 U2R. The
        label set {0, ..., 4} is public: pass ``classes=range(5)`` to a
        private classifier. The Bunch of ``return_frame`` also gets
        ``target_names`` (:data:`KDDCUP99_FIVE_CLASS_NAMES` as a list).

    Returns
    -------
    X : ndarray of shape (n, d), float64, C-contiguous
        The 38 numeric columns in file order, then the one-hot groups
        protocol_type, service, flag ("column=category"). Every row norm <= 1.
    y : ndarray of shape (n,), int64
        target="dos": +1 if not a denial-of-service attack, -1 if one.
        target="five_class": the category code 0..4.
    """
    _check_choice("preprocess", preprocess, {"paper", "public"})
    _check_choice("target", target, {"dos", "five_class"})
    if not isinstance(return_frame, bool):
        raise ValueError(f"return_frame must be a bool, got {return_frame!r}")
    if not isinstance(return_feature_names, bool):
        raise ValueError(f"return_feature_names must be a bool, got {return_feature_names!r}")
    if n_samples is not None:
        if not isinstance(n_samples, (numbers.Integral, np.integer)) or isinstance(n_samples, bool):
            raise ValueError(f"n_samples must be None or an int, got {n_samples!r}")
        if not 1 <= n_samples <= _N_ROWS:
            raise ValueError(f"n_samples must be in [1, {_N_ROWS}], got {n_samples!r}")
        rng = check_random_state(random_state, "random_state")
    elif random_state is not None:
        raise ValueError("random_state is only used with n_samples")

    if preprocess == "paper":
        warnings.warn(
            'load_kddcup99(preprocess="paper") reads category lists and column scales '
            'from the data (the paper\'s protocol); use preprocess="public" for '
            "private training",
            PrivacyLeakWarning,
            stacklevel=2,
        )
    tab = _table(DATA_DIR)
    Xu, names = _encoded(preprocess, DATA_DIR)
    if n_samples is None:
        rows = np.arange(_N_ROWS)
    else:
        rows = rng.choice(_N_ROWS, size=int(n_samples), replace=False)
    u = tab.inv[rows]
    X = np.take(Xu, u, axis=0)  # a fresh C-contiguous float64 array
    if target == "dos":
        y = tab.sign[tab.label_codes[u]]
    else:
        y = _five_class_codes(tab.label_levels)[tab.label_codes[u]]
    names = list(names)
    if return_frame:
        extra = {} if target == "dos" else {"target_names": list(KDDCUP99_FIVE_CLASS_NAMES)}
        return Bunch(
            data=X, target=y, feature_names=names, frame=_frame(tab, rows),
            row_indices=rows, preprocess=preprocess, n_samples=n_samples,
            **extra,
        )
    if return_feature_names:
        return X, y, names
    return X, y
