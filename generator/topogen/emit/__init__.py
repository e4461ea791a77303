"""Emit: write the output tree atomically and deterministically, touching only what topogen
owns (layout.py, swap.py, journal.py, writer.py), and say what a refused group keeps
(refusal.py). Import the modules themselves: every command finishes an interrupted render
(journal.py) and must not pay for the writer's templates (jinja2) to do so."""
