"""Grading claimed solutions and setting exercises: ``python -m experiments.grade`` and ``python -m
experiments.exercise``. The judging itself is solvers.grading.check_point (the closing checks of every solve)."""
