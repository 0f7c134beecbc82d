"""`import dperm` never imports pyspark; `import dperm.spark` without it says what to install."""
import os
import subprocess
import sys


def _run(code):
    # run outside the checkout's root: `python -c` puts the working folder first on
    # sys.path, where a non-editable install would find the source tree, not the build
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=os.path.dirname(os.path.abspath(__file__)))


def test_import_dperm_does_not_import_pyspark():
    out = _run("import sys, dperm, dperm.data.oracle, dperm.data.spark_rows\n"
               "assert 'pyspark' not in sys.modules, 'pyspark imported'\nprint('ok')")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_dperm_spark_without_pyspark_names_the_install():
    out = _run("import sys\nsys.modules['pyspark'] = None\n"
               "try:\n    import dperm.spark\nexcept ImportError as e:\n    print(e)\n"
               "else:\n    print('imported')")
    assert out.returncode == 0, out.stderr
    assert "pip install 'dperm[spark]'" in out.stdout
