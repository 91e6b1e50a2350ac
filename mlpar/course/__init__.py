"""Course tooling, the top layer: lesson frames and navigation, running notebooks, the student edition.

    python -m mlpar.course run notebooks/01_loops_to_threads.ipynb   # re-execute in place
    python -m mlpar.course nav [--check]        # index, prev/next cells, Colab cells, README map
    python -m mlpar.course student student [--check]   # the published student edition
    python -m mlpar.course grade SUBMISSIONS --out grades.csv   # grade a class (mlpar.course.grading)
    python -m mlpar.course tag-grading [--check]   # tag the cells grading mode runs
"""
