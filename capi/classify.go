package main

/*
#include "goldtrace.h"
*/
import "C"

// classifyEngineError maps errors of the engine packages to statuses.
func classifyEngineError(err error) C.gt_status {
	return statusInvalidArgument
}
