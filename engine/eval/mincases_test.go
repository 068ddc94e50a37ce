package eval

import "testing"

// requireCases fails t when a manifest-driven test got fewer than min cases:
// a generator that silently writes nothing (or half of its cases) must not
// leave its test green.
func requireCases[T any](t *testing.T, cases []T, min int) {
	t.Helper()
	if len(cases) < min {
		t.Fatalf("the generator produced %d cases, want at least %d", len(cases), min)
	}
}
