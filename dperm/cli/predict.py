"""`dperm predict`: apply a model file to a CSV."""
import sys

from dperm.cli._common import _note, _write_text


def cmd_predict(args):
    import csv
    import io

    import numpy as np

    from dperm.cli._io import MISSING_HINT_PREDICT, apply_missing, load_model, read_csv

    model = load_model(args.model)
    table = read_csv(args.data, delimiter=args.delimiter)
    apply_missing(table, model["schema"], policy="error", hint=MISSING_HINT_PREDICT)
    X = _encode(table, model["schema"], args.unknown)
    coef = model["coef"]
    if model.get("task") == "regression":
        return _write_predictions(args, table, _regression_rows(X @ coef + model["intercept"]))
    classes = model["classes"]
    logistic = model["estimator"]["loss"] == "logistic"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if coef.ndim == 1:
        score = X @ coef + model["intercept"]
        w.writerow(["prediction", "score"] + (["probability"] if logistic else []))
        if logistic:
            # stable sigmoid: P(positive class)
            e = np.exp(-np.abs(score))
            prob = np.where(score >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        for i, s in enumerate(score):
            row = [classes[1] if s > 0 else classes[0], repr(float(s))]
            if logistic:
                row.append(repr(float(prob[i])))
            w.writerow(row)
    else:
        # K > 2 classes: one score per class, the prediction is the largest
        score = np.asarray(X @ coef.T) + model["intercept"]
        pred = np.argmax(score, axis=1)
        w.writerow(["prediction"] + [f"score:{c}" for c in classes]
                   + ([f"probability:{c}" for c in classes] if logistic else []))
        if logistic:
            prob = _class_probabilities(score, (model.get("privacy") or {}).get("multiclass"))
        for i in range(score.shape[0]):
            row = [classes[pred[i]]] + [repr(float(v)) for v in score[i]]
            if logistic:
                row += [repr(float(v)) for v in prob[i]]
            w.writerow(row)
    if args.output in (None, "-"):
        sys.stdout.write(buf.getvalue())
        sys.stdout.flush()
    else:
        _write_text(args.output, buf.getvalue(), "predictions")
        _note(f"{table.n_rows} predictions written to {args.output}")
    return 0


def _encode(table, schema, unknown):
    """The encoded rows; a category the model's schema does not list is an error naming
    the row, line, column and value (as in the Python pipeline), or with --unknown zero
    an all-zero group for that column."""
    from dperm.cli._io import CLIError, encode_rows

    try:
        X, _ = encode_rows(table, schema, unknown=unknown)
    except CLIError as exc:
        msg = str(exc)
        python_hint = "(in Python, unknown='ignore' encodes such values as an all-zero group)"
        if "unknown category" not in msg:
            raise
        raise CLIError(msg.replace(python_hint, "of the model's schema and fit again, or pass "
                                   "--unknown zero to predict such a row with an all-zero "
                                   "group for that column")) from None
    return X


def _regression_rows(pred):
    """The CSV of a regression model: one real prediction per row."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["prediction"])
    for v in pred:
        w.writerow([repr(float(v))])
    return buf


def _write_predictions(args, table, buf):
    if args.output in (None, "-"):
        sys.stdout.write(buf.getvalue())
        sys.stdout.flush()
    else:
        _write_text(args.output, buf.getvalue(), "predictions")
        _note(f"{table.n_rows} predictions written to {args.output}")
    return 0


def _class_probabilities(score, multiclass):
    """(n, K) probabilities of K > 2 classes, as PrivateLinearClassifier.predict_proba:
    softmax of the scores (multinomial model), or the K one-vs-rest sigmoids normalised
    to sum to 1."""
    import numpy as np
    from scipy.special import logsumexp

    s = -np.logaddexp(0.0, -score) if multiclass == "ovr" else score
    return np.exp(s - logsumexp(s, axis=1, keepdims=True))


# ----------------------------------------------------------------------------- parser
