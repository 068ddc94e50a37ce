package ir

import "testing"

func BenchmarkValidateTiledMatmul(b *testing.B) {
	k := tiledMatmul(1024, 1024, 1024).k
	for b.Loop() {
		if err := Validate(k); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalTiledMatmul(b *testing.B) {
	data, err := Marshal(tiledMatmul(1024, 1024, 1024).k)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
}
