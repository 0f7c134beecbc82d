"""`dperm reproduce all`: every registered experiment, then one report.

Each experiment runs into its own folder under `out/` (its CSV and PNG files), and
`report.md` and `report.html` in `out/` show, per experiment: what it reproduces, the
protocol (full or quick), the wall time, its tables as printed (they carry the paper's
numbers beside ours and the differences), its plots, and links to its CSV files.  The
HTML file is self-contained apart from the PNGs it links, so a person can open it in a
browser from the results folder.
"""
import csv
import datetime
import html
import inspect
import os
import time

__all__ = ["run_all", "write_report", "csv_as_text", "returned_files", "returned_text"]


def csv_as_text(path, max_rows=80):
    """A small CSV as an aligned text table ('' when it is large or unreadable)."""
    try:
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
    except OSError:
        return ""
    if not rows or len(rows) > max_rows + 1:
        return ""
    widths = [max(len(r[j]) if j < len(r) else 0 for r in rows) for j in range(len(rows[0]))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows)


def returned_files(item):
    """Paths named by a runner's return value (a path, a list of paths, or None)."""
    if item is None:
        return []
    if isinstance(item, (list, tuple)):
        return [p for x in item for p in returned_files(x)]
    if isinstance(item, str) and os.path.isfile(item):
        return [item]
    return []


def returned_text(item):
    return item if isinstance(item, str) and not os.path.isfile(item) else None


def _protocol(run):
    doc = inspect.getdoc(run) or ""
    return " ".join(doc.split("\n\n")[0].split())


def run_all(out="dperm-results", quick=False, progress=True, n_threads=None, seed=0,
            names=None, registry=None):
    """Run every experiment of the registry (or `names`) into out/NAME/; returns a list of
    section dicts (name, title, dataset, protocol, seconds, text, files) for write_report."""
    from dperm import experiments

    registry = experiments.REPRODUCTIONS if registry is None else registry
    names = [n for n in registry if n != "all"] if names is None else list(names)
    sections = []
    for name in names:
        entry = registry[name]
        run = experiments.get_runner(name) if registry is experiments.REPRODUCTIONS else entry.run
        sub = os.path.join(out, name)
        os.makedirs(sub, exist_ok=True)
        kwargs = dict(out=sub, quick=quick, progress=progress, seed=seed)
        if "n_threads" in inspect.signature(run).parameters:
            kwargs["n_threads"] = n_threads
        if progress:
            print(f"[{len(sections) + 1}/{len(names)}] {entry.title} on {entry.dataset}",
                  flush=True)
        t0 = time.perf_counter()
        result = run(**kwargs)
        seconds = time.perf_counter() - t0
        parts = list(result[1:]) if isinstance(result, tuple) else [result]
        text = "\n\n".join(t for t in map(returned_text, parts) if t)
        files = sorted(set(returned_files(parts)) | {os.path.join(sub, f) for f in os.listdir(sub)
                                             if f.endswith((".csv", ".png"))})
        if not text:  # a figure: show its numbers as a table
            text = "\n\n".join(filter(None, (csv_as_text(f) for f in files if f.endswith(".csv"))))
        sections.append(dict(name=name, title=entry.title, dataset=entry.dataset,
                             protocol=_protocol(run), seconds=seconds, text=text, files=files))
    return sections


def _segments(text):
    """Split a section's text into ("table", rows) for Markdown tables (consecutive lines
    starting with '|', a '|---' separator second) and ("pre", text) for everything else."""
    lines = text.rstrip().splitlines()
    out, buf, i = [], [], 0
    while i < len(lines):
        if (lines[i].lstrip().startswith("|") and i + 1 < len(lines)
                and lines[i + 1].replace(" ", "").startswith("|---")):
            if any(b.strip() for b in buf):
                out.append(("pre", "\n".join(buf).strip("\n")))
            buf = []
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            out.append(("table", [rows[0]] + rows[2:]))
            continue
        buf.append(lines[i])
        i += 1
    if any(b.strip() for b in buf):
        out.append(("pre", "\n".join(buf).strip("\n")))
    return out


def _text_md(text):
    md = []
    for kind, part in _segments(text):
        if kind == "table":
            md += ["", "| " + " | ".join(part[0]) + " |", "|" + "---|" * len(part[0])]
            md += ["| " + " | ".join(r) + " |" for r in part[1:]]
        else:
            md += ["", "```", part, "```"]
    return md


def _text_html(text):
    body = []
    for kind, part in _segments(text):
        if kind == "table":
            head = "".join(f"<th>{html.escape(c)}</th>" for c in part[0])
            rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                           for r in part[1:])
            body.append(f"<table><tr>{head}</tr>{rows}</table>")
        else:
            body.append(f"<pre>{html.escape(part)}</pre>")
    return body


def write_report(sections, out, quick, seed):
    """Write out/report.md and out/report.html; returns their paths."""
    from dperm._core._build_info import VERSION as __version__

    total = sum(s["seconds"] for s in sections)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    mode = "quick (reduced protocols: a check of the pipeline, noisy numbers)" if quick else \
        "full protocol"
    head = (f"dperm {__version__}, {mode}, seed {seed}, run {when}; total wall time "
            f"{total:.0f} s on {os.cpu_count()} core(s).")

    def rel(p):
        return os.path.relpath(p, out)
    md = ["# dperm: the paper's experiments, reproduced", "", head, "",
          "Chaudhuri, Monteleoni & Sarwate, *Differentially Private Empirical Risk "
          "Minimization*, JMLR 12 (2011), and Chaudhuri & Monteleoni, *Privacy-preserving "
          "logistic regression*, NIPS 2008. Tables print the paper's numbers beside ours; "
          "where the paper gives a figure without numbers, our plot stands alone. "
          "REPRODUCTION.md explains every difference.", "", "| experiment | data | wall time |",
          "|---|---|---|"]
    md += [f"| [{s['title']}](#{s['name']}) | {s['dataset']} | {s['seconds']:.1f} s |"
           for s in sections]
    body = [f"<h1>dperm: the paper's experiments, reproduced</h1><p>{html.escape(head)}</p>",
            "<table><tr><th>experiment</th><th>data</th><th>wall time</th></tr>"]
    body += [f"<tr><td><a href='#{s['name']}'>{html.escape(s['title'])}</a></td>"
             f"<td>{html.escape(s['dataset'])}</td><td>{s['seconds']:.1f} s</td></tr>"
             for s in sections]
    body.append("</table>")
    for s in sections:
        md += ["", f"<a id='{s['name']}'></a>", f"## {s['title']} ({s['dataset']})", "",
               f"Protocol: {s['protocol']} Ran: {mode.split(' (')[0]}, {s['seconds']:.1f} s.",
               "", f"`dperm reproduce {s['name']}{' --quick' if quick else ''}`"]
        body += [f"<h2 id='{s['name']}'>{html.escape(s['title'])} ({html.escape(s['dataset'])})</h2>",
                 f"<p>Protocol: {html.escape(s['protocol'])} Ran: {s['seconds']:.1f} s. "
                 f"<code>dperm reproduce {s['name']}{' --quick' if quick else ''}</code></p>"]
        if s["text"]:
            md += _text_md(s["text"])
            body += _text_html(s["text"])
        for f in s["files"]:
            if f.endswith(".png"):
                md += ["", f"![{os.path.basename(f)}]({rel(f)})"]
                body.append(f"<p><img src='{html.escape(rel(f))}' alt='{html.escape(os.path.basename(f))}' "
                            "style='max-width:100%'></p>")
        csvs = [f for f in s["files"] if f.endswith(".csv")]
        if csvs:
            md += ["", "Data: " + ", ".join(f"[{os.path.basename(f)}]({rel(f)})" for f in csvs)]
            body.append("<p>Data: " + ", ".join(
                f"<a href='{html.escape(rel(f))}'>{html.escape(os.path.basename(f))}</a>"
                for f in csvs) + "</p>")
    md_path, html_path = os.path.join(out, "report.md"), os.path.join(out, "report.html")
    with open(md_path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(md) + "\n")
    style = ("body{font-family:sans-serif;max-width:96rem;margin:2rem auto;padding:0 1rem}"
             "pre{background:#f6f6f6;padding:.8rem;overflow-x:auto;font-size:.75rem;"
             "white-space:pre}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .6rem}")
    with open(html_path, "w", encoding="utf-8") as fh:
        fh.write("<!doctype html><html><head><meta charset='utf-8'><title>dperm report</title>"
                 f"<style>{style}</style></head><body>" + "\n".join(body) + "</body></html>\n")
    return md_path, html_path
