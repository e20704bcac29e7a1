# rules for kernel-launcher/ (see kernel-launcher/README.md)
include kernel-launcher/pykernel/local.mk
