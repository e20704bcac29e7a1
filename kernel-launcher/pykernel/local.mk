# rules for kernel-launcher/pykernel/ (see its README.md)
