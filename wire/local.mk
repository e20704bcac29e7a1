# rules for wire/ (see wire/README.md)
