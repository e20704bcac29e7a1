# rules for gateway/ (see gateway/README.md)
