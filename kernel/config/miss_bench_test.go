package config

import (
	"fmt"
	"strings"
	"testing"

	"goldtrace/kernel/ir"
	"goldtrace/kernel/ir/irpb"
)

// chainTape is the tape of a 100-instruction kernel (load, 98 scalar adds,
// store) in batches of 64 events, as the tracer streams it.
func chainTape(nOps int) (batches [][]byte, sig ir.Signature) {
	var events []string
	events = append(events, `[0,"a","SHARED_HBM","PARAM",[128,64],11,0,0,16]`, `[0,"t1","SHARED_HBM","OUTPUT",[128,64],11,0,1,70]`,
		`[0,"t2","SBUF","TEMP",[128,64],11,0,1,71]`, `[1,"dma",1,71,[2],[0],null]`)
	for i := 0; i < nOps-2; i++ {
		events = append(events, fmt.Sprintf(`[0,"t%d","SBUF","TEMP",[128,64],11,0,1,73]`, i+3),
			fmt.Sprintf(`[1,"tensor_scalar",1,73,[%d],[%d],{"op0":"add","scalar0":%d.0,"reverse0":false}]`, i+3, i+2, i))
	}
	events = append(events, fmt.Sprintf(`[1,"dma",1,74,[1],[%d],null]`, nOps))
	for len(events) > 0 {
		n := min(64, len(events))
		batches = append(batches, []byte("["+strings.Join(events[:n], ",")+"]"))
		events = events[n:]
	}
	return batches, ir.Signature{Grid: []int64{1}, Inputs: []int32{0}, Outputs: []int32{1}, Files: []string{"a.py", "k.py"}, CoreGridDim: -1, NumCores: 1}
}

// BenchmarkMissGoSide: the Go work of a dump_config miss of a 100-instruction
// kernel, stage by stage (each stage includes the ones before it).
func BenchmarkMissGoSide(b *testing.B) {
	batches, sig := chainTape(100)
	build := func() *irpb.Kernel {
		bl := ir.NewBuilder("chain")
		for _, s := range batches {
			if _, _, err := bl.AppendTape(s); err != nil {
				b.Fatal(err)
			}
		}
		k, err := bl.Finish(sig)
		if err != nil {
			b.Fatal(err)
		}
		return k
	}
	b.Run("decode", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			build()
		}
	})
	b.Run("decode+validate", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := ir.Validate(build()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode+validate+encode", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			k := build()
			if err := ir.Validate(k); err != nil {
				b.Fatal(err)
			}
			if _, err := Encode(FromKernel(k)); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The synchronous part alone (the decode, done while Python traces, is
	// not timed): Validate then Encode, against what gt_kb_finish and
	// gt_kernel_config_encode now do after the decode goroutine checked each
	// batch ahead (Builder.CheckAhead): the rest of the checks while the IR
	// is serialized, then the config from the precomputed parts.
	b.Run("sync/validate+encode", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			k := build()
			b.StartTimer()
			if err := ir.Validate(k); err != nil {
				b.Fatal(err)
			}
			if _, err := Encode(FromKernel(k)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sync/checked-ahead+prepared", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			bl := ir.NewBuilder("chain")
			for _, s := range batches {
				if _, _, err := bl.AppendTape(s); err != nil {
					b.Fatal(err)
				}
				bl.CheckAhead()
			}
			b.StartTimer()
			k, err := bl.Finish(sig)
			if err != nil {
				b.Fatal(err)
			}
			ready := make(chan *Precomputed, 1)
			if err := bl.ValidateMarshal(k, func(data []byte, err error) {
				if err != nil {
					b.Error(err)
				}
				ready <- Precompute(k, data, func(*Config) {})
			}); err != nil {
				b.Fatal(err)
			}
			p := <-ready
			if _, err := p.Encode(p.Config()); err != nil {
				b.Fatal(err)
			}
		}
	})
	// what gt_kb_finish and gt_kernel_config_encode do: the IR serialized
	// and the config's kernel-only parts made while the rules are checked
	b.Run("decode+validate+encode/prepared", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			k := build()
			ready := make(chan *Precomputed, 1)
			if err := ir.ValidateMarshal(k, func(data []byte, err error) {
				if err != nil {
					b.Error(err)
				}
				ready <- Precompute(k, data, func(*Config) {})
			}); err != nil {
				b.Fatal(err)
			}
			p := <-ready
			if _, err := p.Encode(p.Config()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
