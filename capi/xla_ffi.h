/*
 * The part of XLA's typed-FFI plain-C ABI that goldtrace's CPU handler uses,
 * declared here so the build does not need jaxlib (or XLA) installed.
 *
 * Follows xla/ffi/api/c_api.h at API version 0.1 (XLA_FFI_API_MAJOR 0,
 * XLA_FFI_API_MINOR 1); checked against the 0.3 header jaxlib 0.10.2 ships
 * (jax.ffi.include_dir()), whose fields up to the ones below are identical
 * (later versions only append fields). The handler reports API version 0.1 in
 * the metadata handshake, so XLA hands it 0.1-compatible structs.
 *
 * Only what the handler reads is declared; trailing fields of a struct that
 * the handler never touches (XLA_FFI_Api after XLA_FFI_Error_Create,
 * XLA_FFI_Metadata after traits) are left out, which is safe because the
 * handler only ever receives pointers to these structs, never allocates them
 * (except XLA_FFI_Error_Create_Args, declared in full).
 */
#ifndef GOLDTRACE_XLA_FFI_H
#define GOLDTRACE_XLA_FFI_H

#include <stddef.h>
#include <stdint.h>

#define GT_XLA_FFI_STRUCT_SIZE(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))

typedef struct XLA_FFI_Error XLA_FFI_Error;
typedef struct XLA_FFI_ExecutionContext XLA_FFI_ExecutionContext;
typedef struct XLA_FFI_InternalApi XLA_FFI_InternalApi;

/* Extensions: a linked list hanging off a call frame. */
enum { XLA_FFI_Extension_Metadata = 1 };
typedef struct XLA_FFI_Extension_Base {
  size_t struct_size;
  int type; /* XLA_FFI_Extension_Type */
  struct XLA_FFI_Extension_Base *next;
} XLA_FFI_Extension_Base;

typedef struct XLA_FFI_Api_Version {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  int major_version; /* out */
  int minor_version; /* out */
} XLA_FFI_Api_Version;

/* Error codes follow absl::StatusCode. */
enum {
  XLA_FFI_Error_Code_OK = 0,
  XLA_FFI_Error_Code_UNKNOWN = 2,
  XLA_FFI_Error_Code_INVALID_ARGUMENT = 3,
  XLA_FFI_Error_Code_FAILED_PRECONDITION = 9,
  XLA_FFI_Error_Code_UNIMPLEMENTED = 12,
  XLA_FFI_Error_Code_INTERNAL = 13
};

typedef struct XLA_FFI_Error_Create_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  const char *message; /* copied by XLA */
  int errc;            /* XLA_FFI_Error_Code */
} XLA_FFI_Error_Create_Args;

typedef XLA_FFI_Error *XLA_FFI_Error_Create(XLA_FFI_Error_Create_Args *args);

/* DataType numbers equal xla_data.proto's PrimitiveType numbers (PRED=1,
 * S8=2, S16=3, S32=4, S64=5, U8=6, U16=7, U32=8, U64=9, F16=10, F32=11,
 * F64=12, C64=15, BF16=16, C128=18, F8E5M2=19, F8E4M3FN=20, ...), which are
 * goldtrace's dtype numbers, so the handler passes them through. */
typedef int XLA_FFI_DataType;

typedef struct XLA_FFI_Buffer {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_DataType dtype;
  void *data;
  int64_t rank;
  int64_t *dims; /* rank entries */
} XLA_FFI_Buffer;

enum { XLA_FFI_ArgType_BUFFER = 1 };
enum { XLA_FFI_RetType_BUFFER = 1 };
enum {
  XLA_FFI_AttrType_ARRAY = 1,
  XLA_FFI_AttrType_DICTIONARY = 2,
  XLA_FFI_AttrType_SCALAR = 3,
  XLA_FFI_AttrType_STRING = 4
};

typedef struct XLA_FFI_ByteSpan {
  const char *ptr;
  size_t len;
} XLA_FFI_ByteSpan;

/* Execution stages (0.1 numbering; 0.0 differed). */
enum {
  XLA_FFI_ExecutionStage_INSTANTIATE = 0,
  XLA_FFI_ExecutionStage_PREPARE = 1,
  XLA_FFI_ExecutionStage_INITIALIZE = 2,
  XLA_FFI_ExecutionStage_EXECUTE = 3
};

typedef struct XLA_FFI_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  int64_t size;
  int *types;  /* XLA_FFI_ArgType, size entries */
  void **args; /* size entries; BUFFER -> XLA_FFI_Buffer* */
} XLA_FFI_Args;

typedef struct XLA_FFI_Rets {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  int64_t size;
  int *types;  /* XLA_FFI_RetType */
  void **rets; /* BUFFER -> XLA_FFI_Buffer* */
} XLA_FFI_Rets;

/* Attributes, sorted by name. STRING -> XLA_FFI_ByteSpan*. */
typedef struct XLA_FFI_Attrs {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  int64_t size;
  int *types; /* XLA_FFI_AttrType */
  XLA_FFI_ByteSpan **names;
  void **attrs;
} XLA_FFI_Attrs;

/* The leading fields of XLA_FFI_Api; the rest is never read. */
typedef struct XLA_FFI_Api {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_Api_Version api_version;
  const XLA_FFI_InternalApi *internal_api;
  XLA_FFI_Error_Create *XLA_FFI_Error_Create;
} XLA_FFI_Api;

typedef struct XLA_FFI_CallFrame {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  const XLA_FFI_Api *api;
  XLA_FFI_ExecutionContext *ctx;
  int stage; /* XLA_FFI_ExecutionStage */
  XLA_FFI_Args args;
  XLA_FFI_Rets rets;
  XLA_FFI_Attrs attrs;
  /* (newer headers append an out-parameter `future`; a synchronous handler
   * leaves it alone) */
} XLA_FFI_CallFrame;

/* The leading fields of XLA_FFI_Metadata (0.1: these are all of them). */
typedef uint32_t XLA_FFI_Handler_Traits;
typedef struct XLA_FFI_Metadata {
  size_t struct_size;
  XLA_FFI_Api_Version api_version; /* out */
  XLA_FFI_Handler_Traits traits;   /* out */
} XLA_FFI_Metadata;

typedef struct XLA_FFI_Metadata_Extension {
  XLA_FFI_Extension_Base extension_base;
  XLA_FFI_Metadata *metadata;
} XLA_FFI_Metadata_Extension;

/* goldtrace's handler for the CPU target goldtrace_nki_kernel (capi/xla_ffi.c). */
XLA_FFI_Error *gt_xla_ffi_nki_kernel(XLA_FFI_CallFrame *call_frame);

#endif
