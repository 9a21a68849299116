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

# RYZEN_CHECK_DEPS: oneDNN, libxsmm, BLIS, HDF5, libyaml, Check, Open MPI.
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
  PKG_CHECK_MODULES([CHECK], [check >= 0.15], [],
    [AC_MSG_ERROR([Check (unit test framework) not found: install the Debian package check])])
  PKG_CHECK_MODULES([MPI], [ompi-c >= 4.0], [],
    [AC_MSG_ERROR([Open MPI not found: install the Debian packages libopenmpi-dev and openmpi-bin])])
  AC_PATH_PROG([MPIRUN], [mpirun], [no])
  AS_IF([test "x$MPIRUN" = xno],
    [AC_MSG_ERROR([mpirun not found: install the Debian package openmpi-bin])])
])
