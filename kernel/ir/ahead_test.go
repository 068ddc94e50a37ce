package ir

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// replay feeds kernel k to a new builder as the tracer would: tensors
// declared between top-level statements (some after the statements using
// them), the body as instruction and loop events, in batches of random size
// with CheckAhead after each; then Finish with k's signature.
func replay(t *testing.T, r *rand.Rand, k *irpb.Kernel) (*Builder, *irpb.Kernel) {
	k = proto.Clone(k).(*irpb.Kernel)
	var events []*irpb.BuildEvent
	nextTensor := 0
	declare := func(n int) {
		for ; n > 0 && nextTensor < len(k.Tensors); n-- {
			events = append(events, &irpb.BuildEvent{Kind: &irpb.BuildEvent_Tensor{Tensor: k.Tensors[nextTensor]}})
			nextTensor++
		}
	}
	var emit func(body []*irpb.Stmt)
	emit = func(body []*irpb.Stmt) {
		for _, s := range body {
			if l := s.GetLoop(); l != nil {
				inner := l.Body
				events = append(events, &irpb.BuildEvent{Kind: &irpb.BuildEvent_LoopBegin{LoopBegin: l}})
				emit(inner)
				events = append(events, &irpb.BuildEvent{Kind: &irpb.BuildEvent_LoopEnd{LoopEnd: true}})
				continue
			}
			events = append(events, &irpb.BuildEvent{Kind: &irpb.BuildEvent_Inst{Inst: s.GetInst()}})
		}
	}
	if r.IntN(4) == 0 {
		declare(len(k.Tensors))
	}
	for _, s := range k.Body {
		declare(r.IntN(3))
		emit([]*irpb.Stmt{s})
	}
	declare(len(k.Tensors))
	b := NewBuilder(k.Name)
	for len(events) > 0 {
		n := min(len(events), 1+r.IntN(12))
		if _, _, err := b.Append(&irpb.BuildBatch{Events: events[:n]}); err != nil {
			t.Fatal(err)
		}
		events = events[n:]
		b.CheckAhead()
	}
	sig := Signature{Grid: k.Grid, Inputs: k.Inputs, Outputs: k.Outputs, Files: k.Files, NumCores: k.NumCores, CoreGridDim: k.CoreGridDim, Options: k.Options}
	got, err := b.Finish(sig)
	if err != nil {
		t.Fatal(err)
	}
	return b, got
}

// checkAheadAgrees: Builder.ValidateMarshal after checking ahead gives
// Validate's verdict and messages, and Marshal's bytes exactly when the
// structure check passes.
func checkAheadAgrees(t *testing.T, b *Builder, k *irpb.Kernel) (quick bool) {
	t.Helper()
	want := Validate(k)
	wantBytes, mErr := Marshal(k)
	type result struct {
		b   []byte
		err error
	}
	got := make(chan result, 1)
	quick = b.ahead != nil && b.ahead.clean
	err := b.ValidateMarshal(k, func(b []byte, err error) { got <- result{b, err} })
	quick = quick && b.ahead.clean && err == nil
	if (err == nil) != (want == nil) || (err != nil && err.Error() != want.Error()) {
		t.Fatalf("ValidateMarshal after CheckAhead:\n%v\nValidate:\n%v\n%s", err, want, Format(k))
	}
	if mErr != nil {
		select {
		case r := <-got:
			t.Fatalf("done called (%v) for a kernel failing the structure check (%v)", r.err, mErr)
		case <-time.After(5 * time.Millisecond):
		}
		return quick
	}
	if r := <-got; r.err != nil || !bytes.Equal(r.b, wantBytes) {
		t.Fatalf("done got %d bytes, %v; Marshal %d bytes", len(r.b), r.err, len(wantBytes))
	}
	return quick
}

func TestCheckAheadAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	// valid kernels and one-fault variants of them
	valid := []func() *irpb.Kernel{
		func() *irpb.Kernel { return tiledMatmul(512, 1024, 256).k },
		func() *irpb.Kernel { return tiledMatmul(256, 512, 1024).k },
	}
	faults := []func(k *irpb.Kernel){
		func(k *irpb.Kernel) {},
		func(k *irpb.Kernel) { k.Tensors[3].Memory = irpb.Memory_PSUM },                     // a tile of the wrong memory
		func(k *irpb.Kernel) { k.Tensors[5].Shape = []int64{128, 4096} },                    // too big for PSUM
		func(k *irpb.Kernel) { k.Grid = []int64{2} },                                        // grid only known at the end
		func(k *irpb.Kernel) { k.Outputs = nil },                                            // nothing returned
		func(k *irpb.Kernel) { k.Files = nil },                                              // locations name no file
		func(k *irpb.Kernel) { k.Tensors[0].Role = irpb.TensorRole_OUTPUT; k.Inputs = nil }, // written parameter becomes output
		func(k *irpb.Kernel) {
			in := k.Body[0].GetLoop().Body[0].GetLoop().Body[0].GetInst()
			in.Dst[0].Index[0].Terms = append(in.Dst[0].Index[0].Terms, pid(0, 128)) // a program id
		},
		func(k *irpb.Kernel) {
			k.Tensors = append(k.Tensors, &irpb.Tensor{Id: 7, Memory: irpb.Memory_SBUF, Role: irpb.TensorRole_TEMP, Dtype: int32(dtype.F32), Shape: []int64{256, 2}})
		},
		func(k *irpb.Kernel) { k.NumVars++ },
		func(k *irpb.Kernel) { // only the statements' locations name no file
			k.Files = nil
			for _, t := range k.Tensors {
				t.Loc = nil
			}
		},
		func(k *irpb.Kernel) { // a program id that leaves lhsT on the second instance
			k.Grid = []int64{2}
			in := k.Body[0].GetLoop().Body[0].GetLoop().Body[1].GetLoop().Body[0].GetInst()
			in.Src[0].Index[0].Terms = append(in.Src[0].Index[0].Terms, pid(0, 128))
		},
	}
	quick := 0
	for _, mk := range valid {
		for _, f := range faults {
			for range 4 {
				k := mk()
				f(k)
				b, built := replay(t, r, k)
				if checkAheadAgrees(t, b, built) {
					quick++
				}
			}
		}
	}
	if quick == 0 {
		t.Fatal("no kernel took the checked-ahead path")
	}
	// the generator's kernels: every opcode, mostly broken
	for range 1500 {
		data := make([]byte, 64+r.IntN(512))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		b, built := replay(t, r, genKernel(&byteSource{b: data}))
		checkAheadAgrees(t, b, built)
	}
}

// FuzzCheckAhead: a generated kernel (every opcode, mostly broken) replayed
// through the builder in random batches: ValidateMarshal after CheckAhead is
// Validate and Marshal.
func FuzzCheckAhead(f *testing.F) {
	f.Add([]byte{}, uint64(1))
	f.Add([]byte("matmul transposes masks loops and grids"), uint64(2))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 9))
		b, built := replay(t, r, genKernel(&byteSource{b: data}))
		checkAheadAgrees(t, b, built)
	})
}
