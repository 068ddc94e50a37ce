package eval

import (
	"reflect"
	"testing"
)

// The kept plans are ynnPlanF32's, made once per shape: a second request
// returns the very plan the first made.
func TestYnnPlanKeptMatchesPlan(t *testing.T) {
	for _, avx512 := range []bool{false, true} {
		for _, packB := range []bool{false, true} {
			for _, s := range [][3]int{{32, 768, 128}, {32, 768, 256}, {1, 64, 64}, {2048, 1000, 1024}, {7, 13, 4096}, {500, 500, 3}} {
				m, n, k := s[0], s[1], s[2]
				want := ynnPlanF32(m, n, k, avx512, packB)
				got := ynnPlanF32Kept(m, n, k, avx512, packB)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%v avx512=%v packB=%v: kept plan %v, plan %v", s, avx512, packB, got, want)
				}
				if again := ynnPlanF32Kept(m, n, k, avx512, packB); len(again) > 0 && &again[0] != &got[0] {
					t.Fatalf("%v: the plan was made again", s)
				}
			}
		}
	}
}
