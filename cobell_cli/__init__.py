"""cobell: turn a runtime target into a resource reservation (CoBell, IEEE BigData 2018)."""

__version__ = "0.1.0"
