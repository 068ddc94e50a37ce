package main

/*
#include "goldtrace.h"
*/
import "C"

//export gt_kernel_simulate
func gt_kernel_simulate(h C.uint64_t, views *C.gt_tensor_view, n C.int32_t, optsJSON *C.char, out *C.uint64_t, printed **C.char, errOut **C.char) C.gt_status {
	return guard(errOut, func() error { return withStatus(statusUnsupported, "simulator not built") })
}
