"""`python -m topogen`: the same CLI as the `topogen` console script."""

from topogen.cli import main

if __name__ == "__main__":
    main(prog_name="topogen")
