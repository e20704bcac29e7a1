# kennel_flags.m4 - probe compiler and linker flags before using them.
#
# A flag is kept only when the compiler accepts it with -Werror, so that a
# flag the compiler merely warns about ("ignored", "requires -O") is dropped
# and reported instead of breaking an --enable-werror build later.

# KENNEL_CHECK_CFLAG(FLAG, VARIABLE, [CONDITION])
# Appends FLAG to VARIABLE when a small C file compiles with it and, if
# given, the preprocessor CONDITION holds after <string.h> (a flag whose
# only sign of failure is a warning inside a system header, which gcc
# silences, needs one).
AC_DEFUN([KENNEL_CHECK_CFLAG],
[AS_VAR_PUSHDEF([kennel_cache], [kennel_cv_cflag_$1])dnl
AC_CACHE_CHECK([whether $CC accepts $1], [kennel_cache],
  [kennel_save_CFLAGS=$CFLAGS
   CFLAGS="$CFLAGS -Werror $1"
   AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <string.h>
]m4_ifval([$3], [[#if !($3)
#error $1 has no effect here
#endif]])],
                                      [[char b[8]; strcpy (b, "kennel"); return (int) strlen (b);]])],
     [AS_VAR_SET([kennel_cache], [yes])], [AS_VAR_SET([kennel_cache], [no])])
   CFLAGS=$kennel_save_CFLAGS])
AS_VAR_IF([kennel_cache], [yes], [$2="$$2 $1"])
AS_VAR_POPDEF([kennel_cache])])

# KENNEL_CHECK_LDFLAG(FLAG, VARIABLE)
# Appends FLAG to VARIABLE when a small C program links with it.
AC_DEFUN([KENNEL_CHECK_LDFLAG],
[AS_VAR_PUSHDEF([kennel_cache], [kennel_cv_ldflag_$1])dnl
AC_CACHE_CHECK([whether the linker accepts $1], [kennel_cache],
  [kennel_save_LDFLAGS=$LDFLAGS
   LDFLAGS="$LDFLAGS -Werror $1"
   AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
     [AS_VAR_SET([kennel_cache], [yes])], [AS_VAR_SET([kennel_cache], [no])])
   LDFLAGS=$kennel_save_LDFLAGS])
AS_VAR_IF([kennel_cache], [yes], [$2="$$2 $1"])
AS_VAR_POPDEF([kennel_cache])])

# KENNEL_HARDENING
# Sets HARDEN_CPPFLAGS, HARDEN_CFLAGS and HARDEN_LDFLAGS: what a program that
# parses untrusted bytes and sets up a sandbox should be built with.
AC_DEFUN([KENNEL_HARDENING],
[HARDEN_CPPFLAGS=
HARDEN_CFLAGS=
HARDEN_LDFLAGS=
KENNEL_CHECK_CFLAG([-fstack-protector-strong], [HARDEN_CFLAGS])
KENNEL_CHECK_CFLAG([-fstack-clash-protection], [HARDEN_CFLAGS])
KENNEL_CHECK_CFLAG([-Wformat -Wformat-security], [HARDEN_CFLAGS])
# glibc fortifies only with optimisation: the probe compiles with the
# user's CFLAGS, so an -O0 build goes without it (and configure says so).
KENNEL_CHECK_CFLAG([-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2], [HARDEN_CPPFLAGS],
  [defined __USE_FORTIFY_LEVEL && __USE_FORTIFY_LEVEL >= 2])
AS_CASE([$HARDEN_CPPFLAGS], [*_FORTIFY_SOURCE=2*], [],
  [AC_MSG_WARN([_FORTIFY_SOURCE=2 not used: it needs optimisation (CFLAGS=$CFLAGS)])])
KENNEL_CHECK_CFLAG([-fPIE], [HARDEN_CFLAGS])
AS_CASE([$HARDEN_CFLAGS], [*-fPIE*], [KENNEL_CHECK_LDFLAG([-pie], [HARDEN_LDFLAGS])])
KENNEL_CHECK_LDFLAG([-Wl,-z,relro,-z,now], [HARDEN_LDFLAGS])
KENNEL_CHECK_LDFLAG([-Wl,-z,noexecstack], [HARDEN_LDFLAGS])
AC_SUBST([HARDEN_CPPFLAGS])
AC_SUBST([HARDEN_CFLAGS])
AC_SUBST([HARDEN_LDFLAGS])])
