"""The grader: ``python -m mlpar.course grade SUBMISSIONS --out grades.csv``.

Modules, in the order a submission meets them: ``submissions`` (students, lessons, reading a
file safely), ``plan`` (a lesson's exercises and the cells grading mode runs; ``tag-grading``),
``rebuild`` (the official notebook with the student's solution cells), ``integrity`` (what a
solution may not touch), ``sandbox`` and ``runner`` (one process per submission, with limits),
``report`` (grades, summary, feedback) and ``grade`` (all of it, for a class).
"""
