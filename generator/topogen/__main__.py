"""`python -m topogen`: the same CLI as the `topogen` console script."""

from topogen.cli import run

if __name__ == "__main__":
    run()
