# rules for confine/ (see confine/README.md)
