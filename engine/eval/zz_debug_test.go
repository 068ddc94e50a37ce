package eval

import (
	"fmt"
	"os"
	"testing"

	"goldtrace/engine/hlo"
)

func TestZZDebugPlan(t *testing.T) {
	path := os.Getenv("PLAN_HLO")
	if path == "" {
		t.Skip()
	}
	data, _ := os.ReadFile(path)
	m, err := hlo.ParseText(data, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Computations {
		p := planFusion(c)
		fmt.Println("==", c.Name)
		for _, in := range c.Instructions {
			if p != nil && p.interior[in] {
				continue
			}
			if g := p.group(in); g != nil {
				var names []string
				for _, mm := range g.members {
					names = append(names, mm.Name)
				}
				fmt.Println("  GROUP", in.Name, names)
				continue
			}
			fmt.Println("  op", in.Opcode, in.Name, in.Shape.Dims)
		}
	}
}
