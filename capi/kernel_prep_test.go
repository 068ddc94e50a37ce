package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"goldtrace/kernel/config"
	"goldtrace/kernel/ir"
)

// chainBatches is the compact tape of a load, n-2 scalar adds and a store,
// in batches of 64 events (as the tracer streams it); bad makes one add's
// operand a PSUM tile too wide for a bank.
func chainBatches(n int, bad bool) [][]byte {
	events := []string{`[0,"a","SHARED_HBM","PARAM",[128,64],11,0,0,16]`, `[0,"t1","SHARED_HBM","OUTPUT",[128,64],11,0,1,70]`,
		`[0,"t2","SBUF","TEMP",[128,64],11,0,1,71]`, `[1,"dma",1,71,[2],[0],null]`}
	for i := 0; i < n-2; i++ {
		mem, free := "SBUF", 64
		if bad && i == n/2 {
			mem, free = "PSUM", 1024
		}
		events = append(events, fmt.Sprintf(`[0,"t%d","%s","TEMP",[128,%d],11,0,1,73]`, i+3, mem, free),
			fmt.Sprintf(`[1,"tensor_scalar",1,73,[%d],[%d],{"op0":"add","scalar0":%d.0,"reverse0":false}]`, i+3, i+2, i))
	}
	events = append(events, fmt.Sprintf(`[1,"dma",1,74,[1],[%d],null]`, n))
	var batches [][]byte
	for len(events) > 0 {
		m := min(64, len(events))
		batches = append(batches, []byte("["+strings.Join(events[:m], ",")+"]"))
		events = events[m:]
	}
	return batches
}

const chainSig = `{"grid": [1], "inputs": [0], "outputs": [1], "files": ["a.py", "k.py"], "num_cores": 1, "core_grid_dim": -1, "options": {"mode": "jax"}, "mutable": []}`

const chainExtras = `{"func_name": "chain", "platform_target": "trn1", "platform_target_is_fallback": true, "opts": {"x": "1"}, "has_collectives": false, "constant_values": [{"name": "c", "dtype": "int8", "shape": [2], "data": "AQI="}], "kernel_return": true, "result_is_sequence": false}`

func newTestBuilder(batches [][]byte) *kernelBuilder {
	done := make(chan struct{})
	close(done)
	kb := &kernelBuilder{b: ir.NewBuilder("chain"), tail: done}
	for _, b := range batches {
		kb.enqueue(b, false)
	}
	return kb
}

// plainConfig is the backend_config the path without preparation makes:
// finish, Validate, then FromKernel and Encode.
func plainConfig(t *testing.T, batches [][]byte) (string, error) {
	b := ir.NewBuilder("chain")
	for _, s := range batches {
		if _, _, err := b.AppendTape(s); err != nil {
			t.Fatal(err)
		}
	}
	var sig ir.Signature
	if err := json.Unmarshal([]byte(chainSig), &sig); err != nil {
		t.Fatal(err)
	}
	k, err := b.Finish(sig)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateKernel(k); err != nil {
		return "", err
	}
	var ex configExtras
	if err := json.Unmarshal([]byte(chainExtras), &ex); err != nil {
		t.Fatal(err)
	}
	c := config.FromKernel(k)
	c.FuncName, c.PlatformTarget, c.PlatformTargetIsFallback = ex.FuncName, ex.PlatformTarget, ex.PlatformTargetIsFallback
	for key, v := range ex.Opts {
		c.Opts[key] = v
	}
	c.ConstantValues, c.KernelReturn, c.ResultIsSequence = ex.ConstantValues, ex.KernelReturn, ex.ResultIsSequence
	return config.Encode(c)
}

// TestFinishThenEncode: the prepared path gives the plain path's config, and
// for an invalid kernel the same error at finish; preparations are dropped
// with their handle. Under -race, several misses at once.
func TestFinishThenEncode(t *testing.T) {
	good := chainBatches(100, false)
	want, err := plainConfig(t, good)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				k, err := finishKernel(newTestBuilder(good), []byte(chainSig))
				if err != nil {
					t.Error(err)
					return
				}
				h := newHandle(k)
				for range 2 { // a second encode of the same handle sees no edit of the first
					got, err := encodeKernelConfig(k, []byte(chainExtras))
					if err != nil || got != want {
						t.Errorf("goroutine %d: prepared config differs (%v)", g, err)
					}
				}
				freeHandle(h)
				if _, ok := kernelPreps.Load(k); ok {
					t.Errorf("preparation outlived its handle")
				}
				// a kernel without preparation takes the plain path
				if got, err := encodeKernelConfig(k, []byte(chainExtras)); err != nil || got != want {
					t.Errorf("unprepared config differs (%v)", err)
				}
			}
		}()
	}
	wg.Wait()

	bad := chainBatches(100, true)
	_, wantErr := plainConfig(t, bad)
	if wantErr == nil {
		t.Fatal("the bad chain validates")
	}
	k, err := finishKernel(newTestBuilder(bad), []byte(chainSig))
	if k != nil || err == nil || err.Error() != wantErr.Error() || classify(err) != classify(wantErr) {
		t.Fatalf("finish of an invalid kernel: %v, want %v", err, wantErr)
	}
}
