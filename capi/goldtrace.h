/*
 * goldtrace C ABI. Stable, versioned by gt_abi_version(); fields and functions
 * are only ever appended.
 *
 * Rules:
 *  - Go objects cross as opaque uint64 handles (0 is never a valid handle).
 *  - Tensors cross as views: Go reads the caller's memory only during the call
 *    and keeps no reference to it.
 *  - Every function returns a gt_status. On failure, *err (when err is not NULL)
 *    receives a malloc'ed NUL-terminated message the caller frees with gt_free.
 *  - Results produced by Go come back as a result-set handle: query counts,
 *    dtypes and dims, copy each tensor into caller memory, then free the handle.
 */
#ifndef GOLDTRACE_H
#define GOLDTRACE_H

#include <stddef.h>
#include <stdint.h>

#define GT_ABI_VERSION 1

typedef int32_t gt_status;
enum {
  GT_OK = 0,
  GT_ERR_INVALID_ARGUMENT = 1, /* bad argument: shape, dtype, count, value */
  GT_ERR_PARSE = 2,            /* malformed HLO text, proto or npy */
  GT_ERR_EVAL = 3,             /* evaluation failed at an instruction */
  GT_ERR_IO = 4,               /* file missing, unreadable, unwritable */
  GT_ERR_UNSUPPORTED = 5,      /* opcode, type or custom-call target not supported */
  GT_ERR_NOT_FOUND = 6,        /* unknown handle */
  GT_ERR_INTERNAL = 7          /* a Go panic, recovered */
};

/* A dense row-major tensor in caller memory. dtype is the XLA PrimitiveType number. */
typedef struct {
  void *data;
  int64_t nbytes;
  int32_t dtype;
  int32_t rank;
  const int64_t *dims;
} gt_tensor_view;

#endif
