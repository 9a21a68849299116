# ryzen.m4: project checks. Every dependency check fails naming the Debian package to install
# (tools/install-deps installs them all).

# RYZEN_CHECK_CFLAG(FLAG, IF-OK, [IF-NOT]): does the C compiler accept FLAG (warnings as errors)?
AC_DEFUN([RYZEN_CHECK_CFLAG], [
  AC_MSG_CHECKING([whether $CC accepts $1])
  ryzen_saved_cflags="$CFLAGS"
  CFLAGS="$CFLAGS -Werror $1"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); CFLAGS="$ryzen_saved_cflags"; $2],
    [AC_MSG_RESULT([no]); CFLAGS="$ryzen_saved_cflags"; $3])
])

# RYZEN_WARNINGS: a real warning set; --enable-werror turns warnings into errors (CI does).
AC_DEFUN([RYZEN_WARNINGS], [
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors])],
    [], [enable_werror=no])
  RYZEN_WARN_CFLAGS=""
  for flag in -Wall -Wextra -Wshadow -Wpointer-arith -Wcast-align -Wstrict-prototypes \
              -Wmissing-prototypes -Wmissing-declarations -Wwrite-strings -Wformat=2 \
              -Wundef -Wvla -Wno-unused-parameter -Wnull-dereference -Wdouble-promotion; do
    RYZEN_CHECK_CFLAG([$flag], [RYZEN_WARN_CFLAGS="$RYZEN_WARN_CFLAGS $flag"])
  done
  AS_IF([test "x$enable_werror" = xyes], [RYZEN_WARN_CFLAGS="$RYZEN_WARN_CFLAGS -Werror"])
  AC_SUBST([RYZEN_WARN_CFLAGS])
  # The one C++ file (src/tok/tok_spm.cc): the C set less the flags that are C only.
  RYZEN_WARN_CXXFLAGS="-Wall -Wextra -Wshadow -Wpointer-arith -Wcast-align -Wformat=2 -Wundef -Wno-unused-parameter"
  AS_IF([test "x$enable_werror" = xyes], [RYZEN_WARN_CXXFLAGS="$RYZEN_WARN_CXXFLAGS -Werror"])
  AC_SUBST([RYZEN_WARN_CXXFLAGS])
])

# RYZEN_SANITIZERS: --enable-asan, --enable-ubsan.
AC_DEFUN([RYZEN_SANITIZERS], [
  AC_ARG_ENABLE([asan],
    [AS_HELP_STRING([--enable-asan], [build with AddressSanitizer])], [], [enable_asan=no])
  AC_ARG_ENABLE([ubsan],
    [AS_HELP_STRING([--enable-ubsan], [build with UndefinedBehaviorSanitizer])], [], [enable_ubsan=no])
  RYZEN_SAN_CFLAGS=""
  AS_IF([test "x$enable_asan" = xyes], [RYZEN_SAN_CFLAGS="$RYZEN_SAN_CFLAGS -fsanitize=address -fno-omit-frame-pointer"])
  AS_IF([test "x$enable_ubsan" = xyes], [RYZEN_SAN_CFLAGS="$RYZEN_SAN_CFLAGS -fsanitize=undefined -fno-sanitize-recover=undefined"])
  AC_SUBST([RYZEN_SAN_CFLAGS])
])

# RYZEN_CHECK_DEPS: oneDNN, libxsmm, BLIS, HDF5, libyaml, Check (optional), MPI.
AC_DEFUN([RYZEN_CHECK_DEPS], [
  # oneDNN ships no pkg-config file in Debian; check the header and the library.
  AC_CHECK_HEADER([oneapi/dnnl/dnnl.h], [],
    [AC_MSG_ERROR([oneDNN headers not found: install the Debian package libdnnl-dev])])
  AC_CHECK_LIB([dnnl], [dnnl_engine_create], [DNNL_LIBS="-ldnnl"],
    [AC_MSG_ERROR([oneDNN library not found: install the Debian package libdnnl-dev])])
  AC_SUBST([DNNL_LIBS])

  # libxsmm: JIT kernels for the attention's small tile matmuls (src/kernels/kern_xsmm.c).  Its
  # pkg-config file lists libxsmmnoblas (its stand-in for the BLAS fallback we never call)
  # before libxsmm, which static linking cannot resolve: the order is given here.
  AC_CHECK_HEADER([libxsmm.h], [],
    [AC_MSG_ERROR([libxsmm headers not found: install the Debian package libxsmm-dev])])
  AC_CHECK_LIB([xsmm], [libxsmm_smmdispatch],
    [XSMM_LIBS="-lxsmm -lxsmmnoblas -lpthread -lrt -ldl"],
    [AC_MSG_ERROR([libxsmm library not found: install the Debian package libxsmm-dev])],
    [-lxsmmnoblas -lpthread -lrt -ldl -lm])
  AC_SUBST([XSMM_LIBS])

  # BLIS (OpenMP build): the weight gradients where oneDNN runs AVX2 (src/kernels/kern_blis.c).
  AC_CHECK_HEADER([blis.h], [],
    [AC_MSG_ERROR([BLIS headers not found: install the Debian packages libblis-dev and libblis-openmp-dev])])
  AC_CHECK_LIB([blis], [bli_sgemm_ex], [BLIS_LIBS="-lblis"],
    [AC_MSG_ERROR([BLIS library not found: install the Debian packages libblis-dev and libblis-openmp-dev])],
    [-lm])
  AC_SUBST([BLIS_LIBS])

  PKG_CHECK_MODULES([HDF5], [hdf5 >= 1.10], [],
    [AC_MSG_ERROR([HDF5 >= 1.10 not found: install the Debian package libhdf5-dev])])
  PKG_CHECK_MODULES([YAML], [yaml-0.1 >= 0.2], [],
    [AC_MSG_ERROR([libyaml not found: install the Debian package libyaml-dev])])
  # SentencePiece: the tokenizer behind src/tok/tok.h (its one C++ file, tok_spm.cc).
  PKG_CHECK_MODULES([SPM], [sentencepiece >= 0.1.90], [],
    [AC_MSG_ERROR([SentencePiece not found: install the Debian package libsentencepiece-dev])])
  SPM_LIBS="$SPM_LIBS -lsentencepiece_train"
  # Check is for `make check` only: without it the programs build and install, and configure's
  # summary and `make check` say what is left out (HAVE_CHECK in Makefile.am).
  PKG_CHECK_MODULES([CHECK], [check >= 0.15], [ryzen_have_check=yes],
    [ryzen_have_check=no
     AC_MSG_WARN([Check (unit test framework) not found: the unit suites are left out of make check; install the Debian package check])])
  AM_CONDITIONAL([HAVE_CHECK], [test "x$ryzen_have_check" = xyes])
  RYZEN_CHECK_MPI
])

# RYZEN_MPI_KIND_OF(VAR, CC): which MPI the mpi.h that CC (with $CPPFLAGS) finds belongs to:
# openmpi (OMPI_MAJOR_VERSION), mpich (MPICH_VERSION: MPICH and its derivatives, Cray MPICH,
# Intel MPI), other, or none (no mpi.h).
AC_DEFUN([RYZEN_MPI_KIND_OF], [
  ryzen_saved_cc="$CC"
  CC="$2"
  $1=none
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[return MPI_SUCCESS;]])], [$1=other])
  AS_IF([test "x$$1" = xother],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef OMPI_MAJOR_VERSION
#error not Open MPI
#endif]], [])], [$1=openmpi])])
  AS_IF([test "x$$1" = xother],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef MPICH_VERSION
#error not MPICH
#endif]], [])], [$1=mpich])])
  CC="$ryzen_saved_cc"
])

# RYZEN_CHECK_MPI: the MPI library, Open MPI (the default) or MPICH.  --with-mpi=auto (default)
# takes the MPI of, in order: MPI_CFLAGS/MPI_LIBS as the user set them; the C compiler itself
# when it links MPI_Init (CC=mpicc.mpich); $MPICC (default `mpicc`, Debian's alternative);
# else whichever of ompi-c and mpich pkg-config knows, Open MPI first.  --with-mpi=openmpi|mpich
# names it.  Sets MPI_CFLAGS, MPI_LIBS, MPI_KIND (openmpi|mpich), MPI_NAME and MPIRUN (the
# launcher of the multi-rank suites: Open MPI's mpirun, MPICH's Hydra mpiexec).
AC_DEFUN([RYZEN_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi=auto|openmpi|mpich],
      [the MPI library (default auto: MPI_CFLAGS/MPI_LIBS, else the compiler's, else mpicc's
       (MPICC), else Open MPI's then MPICH's pkg-config module)])],
    [], [with_mpi=auto])
  AC_ARG_VAR([MPICC], [the MPI compiler wrapper whose MPI --with-mpi=auto takes (default mpicc)])
  AC_ARG_VAR([MPIRUN], [the MPI launcher of the multi-rank test suites])
  AS_CASE([$with_mpi], [auto|openmpi|mpich], [],
    [AC_MSG_ERROR([--with-mpi=$with_mpi: say auto, openmpi or mpich])])
  AS_IF([test -z "$MPICC"], [AC_PATH_PROG([MPICC], [mpicc])])
  # The C compiler's own MPI, when it is a wrapper (CC=mpicc.mpich): every other choice must agree
  # with it, or the programs would link two MPIs.
  ryzen_cc_kind=none
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[return MPI_Init(0, 0);]])],
    [RYZEN_MPI_KIND_OF([ryzen_cc_kind], [$CC])])
  AC_MSG_CHECKING([which MPI to use])
  MPI_KIND=
  ryzen_mpi_from=
  AS_IF([test -n "$MPI_CFLAGS$MPI_LIBS"], [
      ryzen_saved_cppflags="$CPPFLAGS"
      CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"
      RYZEN_MPI_KIND_OF([MPI_KIND], [$CC])
      CPPFLAGS="$ryzen_saved_cppflags"
      ryzen_mpi_from="MPI_CFLAGS/MPI_LIBS"],
    [test "x$with_mpi" != xauto], [MPI_KIND=$with_mpi; ryzen_mpi_from="--with-mpi"],
    [test "x$ryzen_cc_kind" != xnone], [MPI_KIND=$ryzen_cc_kind; ryzen_mpi_from="$CC"],
    [test -n "$MPICC"], [
      RYZEN_MPI_KIND_OF([MPI_KIND], [$MPICC])
      ryzen_mpi_from="$MPICC"])
  AS_IF([test -z "$MPI_KIND" || test "x$MPI_KIND" = xnone], [
      MPI_KIND=
      ryzen_mpi_from="pkg-config"
      AS_IF([$PKG_CONFIG --exists ompi-c], [MPI_KIND=openmpi],
            [$PKG_CONFIG --exists mpich], [MPI_KIND=mpich])])
  AC_MSG_RESULT([${MPI_KIND:-none} (from $ryzen_mpi_from)])
  AS_IF([test "x$with_mpi" != xauto && test "x$MPI_KIND" != "x$with_mpi"],
    [AC_MSG_ERROR([--with-mpi=$with_mpi, but the MPI of $ryzen_mpi_from is ${MPI_KIND:-none}])])
  AS_IF([test "x$ryzen_cc_kind" != xnone && test "x$MPI_KIND" != "x$ryzen_cc_kind"],
    [AC_MSG_ERROR([$CC is a compiler wrapper of $ryzen_cc_kind, but the MPI of $ryzen_mpi_from is ${MPI_KIND:-none}: use a plain CC, or name its MPI])])
  AS_CASE([$MPI_KIND],
    [openmpi], [
      MPI_NAME="Open MPI"
      AS_IF([test -z "$MPI_CFLAGS$MPI_LIBS" && test "x$ryzen_cc_kind" = xnone],
        [PKG_CHECK_MODULES([MPI], [ompi-c >= 4.0], [],
          [AC_MSG_ERROR([Open MPI not found: install the Debian packages libopenmpi-dev and openmpi-bin])])])
      AC_PATH_PROGS([MPIRUN], [mpirun.openmpi mpirun], [no])
      AS_IF([test "x$MPIRUN" = xno],
        [AC_MSG_ERROR([mpirun not found: install the Debian package openmpi-bin])])],
    [mpich], [
      MPI_NAME="MPICH"
      AS_IF([test -z "$MPI_CFLAGS$MPI_LIBS" && test "x$ryzen_cc_kind" = xnone],
        [PKG_CHECK_MODULES([MPI], [mpich >= 3.3], [],
          [AC_MSG_ERROR([MPICH not found: install the Debian packages libmpich-dev and mpich])])])
      AC_PATH_PROGS([MPIRUN], [mpiexec.mpich mpiexec.hydra mpiexec], [no])
      AS_IF([test "x$MPIRUN" = xno],
        [AC_MSG_ERROR([MPICH's mpiexec not found: install the Debian package mpich])])],
    [other], [AC_MSG_ERROR([the MPI of $ryzen_mpi_from is neither Open MPI nor MPICH (nor an MPICH derivative): give --with-mpi and MPI_CFLAGS/MPI_LIBS of one of them])],
    [AC_MSG_ERROR([no MPI found: install the Debian packages libopenmpi-dev and openmpi-bin (or libmpich-dev and mpich, with --with-mpi=mpich)])])
  AC_SUBST([MPI_KIND])
  AC_SUBST([MPI_NAME])
])
