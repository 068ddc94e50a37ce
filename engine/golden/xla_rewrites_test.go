package golden

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// rewriteCase is one manifest entry of the rewrite generator.
type rewriteCase struct {
	Name    string
	HLO     string
	Inputs  []rewriteArray
	Outputs []rewriteArray
}

type rewriteArray struct {
	File  string
	Dtype string
	Shape []int64
}

func loadRewriteArray(dir string, a rewriteArray) (*tensor.Tensor, error) {
	typ, ok := dtype.FromNumpy(a.Dtype)
	if !ok {
		return nil, fmt.Errorf("unknown dtype %q", a.Dtype)
	}
	data, err := os.ReadFile(filepath.Join(dir, a.File))
	if err != nil {
		return nil, err
	}
	return tensor.FromBytes(typ, a.Shape, data)
}

// ulpDiff counts the elements whose bits differ and the largest difference
// in units of the last place (by ordered integer distance).
func ulpDiff(got, want *tensor.Tensor) (n int, worst int64) {
	w := int(got.Type.Bits() / 8)
	for i := 0; i+w <= len(got.Data) && i+w <= len(want.Data); i += w {
		a, b := ordered(got.Data[i:i+w]), ordered(want.Data[i:i+w])
		if a != b {
			n++
			d := a - b
			if d < 0 {
				d = -d
			}
			worst = max(worst, d)
		}
	}
	return n, worst
}

func ordered(b []byte) int64 {
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	bits := uint(len(b) * 8)
	sign := uint64(1) << (bits - 1)
	if u&sign != 0 {
		return -int64(u &^ sign)
	}
	return int64(u)
}

var _ = math.Abs

func TestXLARewritesExperiment(t *testing.T) {
	dir := os.Getenv("GOLDTRACE_XR_DIR")
	if dir == "" {
		t.Skip("GOLDTRACE_XR_DIR not set")
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []rewriteCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		l, err := LoadModule(filepath.Join(dir, c.HLO), ModuleAuto)
		if err != nil {
			t.Fatal(err)
		}
		var in []*tensor.Tensor
		for _, a := range c.Inputs {
			x, err := loadRewriteArray(dir, a)
			if err != nil {
				t.Fatal(err)
			}
			in = append(in, x)
		}
		res, err := Run(l.Module, in, Options{})
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		line := ""
		for k, o := range c.Outputs {
			want, err := loadRewriteArray(dir, o)
			if err != nil {
				t.Fatal(err)
			}
			n, worst := ulpDiff(res.Outputs[k], want)
			line += fmt.Sprintf(" out%d %d/%d (max %d ulp)", k, n, tensor.NumElements(want.Dims), worst)
		}
		fmt.Printf("%-22s%s\n", c.Name, line)
	}
}
