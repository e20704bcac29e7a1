# rules for kernel-launcher/ (see kernel-launcher/README.md)
