// Package customcall runs kernel custom-calls: a backend_config (base64 JSON
// of kernel/config's schema, the kernel IR inside) decoded once per distinct
// string, the custom-call's operands bound to the kernel's parameters (and
// its constant_values), and the kernel run in kernel/sim in process.
//
// Two callers use it: the golden evaluator, through handlers Register puts
// in engine/eval's custom-call registry (the Neuron targets and goldtrace's
// own typed-FFI target), and libgoldtrace's typed-FFI CPU handler for
// jax.jit (capi/xla_ffi.c), through ExecuteFFI.
package customcall
