// The C half of goldtrace's typed-FFI handler (see xla_ffi.h and
// kernel_ffi.go): the metadata handshake, the stage dispatch, the search for
// the `kernel` attribute and the error trampoline through
// call_frame->api->XLA_FFI_Error_Create, which Go cannot call itself (a C
// function pointer). Everything else happens in Go (gtFFIExecute).

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xla_ffi.h"
#include "_cgo_export.h"

// The Go runtime does not survive fork(): a child forked after the library
// loaded must not enter Go (it can hang forever), so the handler remembers
// the loading process and refuses elsewhere.
static pid_t gt_ffi_loaded_pid;

__attribute__((constructor)) static void gt_ffi_remember_pid(void) { gt_ffi_loaded_pid = getpid(); }

static XLA_FFI_Error *gt_ffi_error(const XLA_FFI_CallFrame *frame, int errc, const char *msg) {
  if (frame->api == NULL || frame->api->XLA_FFI_Error_Create == NULL) {
    // No way to report it to XLA; say it where a person will see it.
    fprintf(stderr, "goldtrace_nki_kernel: %s (and the call frame has no XLA FFI API to report it)\n", msg);
    return NULL;
  }
  XLA_FFI_Error_Create_Args args;
  memset(&args, 0, sizeof args);
  args.struct_size = GT_XLA_FFI_STRUCT_SIZE(XLA_FFI_Error_Create_Args, errc);
  args.extension_start = NULL;
  args.message = msg;
  args.errc = errc;
  return frame->api->XLA_FFI_Error_Create(&args);
}

XLA_FFI_Error *gt_xla_ffi_nki_kernel(XLA_FFI_CallFrame *frame) {
  if (frame == NULL) {
    return NULL;
  }
  // The metadata query XLA makes at registration (the frame carries no API):
  // answer API version 0.1, no traits.
  for (XLA_FFI_Extension_Base *ext = frame->extension_start; ext != NULL; ext = ext->next) {
    if (ext->type == XLA_FFI_Extension_Metadata) {
      XLA_FFI_Metadata *md = ((XLA_FFI_Metadata_Extension *)ext)->metadata;
      if (md != NULL) {
        md->api_version.major_version = 0;
        md->api_version.minor_version = 1;
        md->traits = 0;
      }
      return NULL;
    }
  }
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) {
    return NULL;  // nothing to instantiate, prepare or initialize
  }
  if (getpid() != gt_ffi_loaded_pid) {
    return gt_ffi_error(frame, XLA_FFI_Error_Code_FAILED_PRECONDITION,
                        "goldtrace_nki_kernel: goldtrace was loaded before this process was forked, and its Go "
                        "runtime cannot run in a forked child; use multiprocessing start method 'spawn' or "
                        "'forkserver'");
  }

  const char *cfg = NULL;
  size_t cfg_len = 0;
  int found = 0;
  for (int64_t i = 0; i < frame->attrs.size; i++) {
    const XLA_FFI_ByteSpan *name = frame->attrs.names[i];
    if (name == NULL || name->len != 6 || memcmp(name->ptr, "kernel", 6) != 0) {
      continue;
    }
    if (frame->attrs.types[i] != XLA_FFI_AttrType_STRING) {
      return gt_ffi_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                          "goldtrace_nki_kernel: attribute 'kernel' must be a string (the kernel's base64 "
                          "backend_config)");
    }
    const XLA_FFI_ByteSpan *s = (const XLA_FFI_ByteSpan *)frame->attrs.attrs[i];
    if (s != NULL) {
      cfg = s->ptr;
      cfg_len = s->len;
    }
    found = 1;
    break;
  }
  if (!found) {
    return gt_ffi_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                        "goldtrace_nki_kernel: the custom-call has no string attribute 'kernel' (the kernel's "
                        "base64 backend_config; lower with backend_config={kernel = \"...\"})");
  }
  for (int64_t i = 0; i < frame->args.size; i++) {
    if (frame->args.types[i] != XLA_FFI_ArgType_BUFFER) {
      return gt_ffi_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                          "goldtrace_nki_kernel: an operand is not a buffer (tokens are not supported)");
    }
  }
  for (int64_t i = 0; i < frame->rets.size; i++) {
    if (frame->rets.types[i] != XLA_FFI_RetType_BUFFER) {
      return gt_ffi_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                          "goldtrace_nki_kernel: a result is not a buffer (tokens are not supported)");
    }
  }

  int errc = 0;
  char *msg = gtFFIExecute((char *)cfg, cfg_len, (XLA_FFI_Buffer **)frame->args.args, frame->args.size,
                           (XLA_FFI_Buffer **)frame->rets.rets, frame->rets.size, &errc);
  if (msg == NULL) {
    return NULL;
  }
  XLA_FFI_Error *err = gt_ffi_error(frame, errc, msg);
  free(msg);
  return err;
}
