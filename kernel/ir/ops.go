package ir

// isaNames maps IR opcodes to the ISA / language names kernel authors wrote,
// used in error messages so they read in the author's terms.
var isaNames = map[string]string{
	"matmul":          "nc_matmul",
	"transpose":       "nc_transpose",
	"dma":             "dma_copy",
	"copy_predicated": "tensor_copy_predicated",
	"print":           "device_print",
}

// DisplayOp is the name an error message uses for IR opcode op.
func DisplayOp(op string) string {
	if n, ok := isaNames[op]; ok {
		return n
	}
	return op
}
