"""The grader: ``python -m mlpar.course grade SUBMISSIONS --out grades.csv``.

Modules, in the order a submission meets them: ``submissions`` (every file under SUBMISSIONS,
read safely) and ``identity`` (who handed it in), ``plan`` (a lesson's exercises and the cells
grading mode runs; ``tag-grading``), ``rebuild`` (the official notebook with the student's
solution cells), ``integrity`` (what a solution may not touch), ``sandbox`` (the bubblewrap
sandbox, or process groups without it), ``runner`` (the student's cells, in the sandbox),
``checker`` and ``plain`` (value checks judged in another process, over a data-only channel),
``channel`` (the runner's events on a pipe, checked), ``csv_safety`` and ``report`` (grades,
summary, feedback, safe to open) and ``grade`` (all of it, for a class).
"""
