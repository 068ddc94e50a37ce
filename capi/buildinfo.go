package main

/*
#include <stdlib.h>
#include "goldtrace.h"
*/
import "C"

import (
	"encoding/json"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"goldtrace/engine/eval"
	"goldtrace/internal/hostcpu"
)

// buildInfo is what goldtrace.build_info() returns: the toolchain and
// settings the library was built with, and the vector code it chose at
// start-up on this CPU.
type buildInfo struct {
	GoVersion   string   `json:"go_version"`
	GOOS        string   `json:"goos"`
	GOARCH      string   `json:"goarch"`
	BuildTags   []string `json:"build_tags"`
	Experiments string   `json:"goexperiment"`
	GOAMD64     string   `json:"goamd64,omitempty"`
	eval.SIMDInfo
	CPUFeatures []string `json:"cpu_features"`
	CPUModel    string   `json:"cpu_model,omitempty"`
	NumCPU      int      `json:"num_cpu"`
}

func collectBuildInfo() buildInfo {
	info := buildInfo{GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		BuildTags: []string{}, SIMDInfo: eval.SIMD(), CPUFeatures: hostcpu.X86.Names(),
		CPUModel: cpuModel(), NumCPU: runtime.NumCPU()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "-tags":
				for _, tag := range strings.Split(s.Value, ",") {
					if tag != "" {
						info.BuildTags = append(info.BuildTags, tag)
					}
				}
			case "GOEXPERIMENT":
				info.Experiments = s.Value
			case "GOAMD64":
				info.GOAMD64 = s.Value
			}
		}
	}
	// Experiments act as build tags (goexperiment.<name>).
	for _, x := range strings.Split(info.Experiments, ",") {
		if x != "" && !strings.HasPrefix(x, "no") {
			info.BuildTags = append(info.BuildTags, "goexperiment."+x)
		}
	}
	return info
}

// cpuModel is /proc/cpuinfo's model name, where there is one.
func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// gt_build_info writes the library's build and SIMD description as JSON.
//
//export gt_build_info
func gt_build_info(out **C.char, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		b, err := json.Marshal(collectBuildInfo())
		if err != nil {
			return err
		}
		*out = C.CString(string(b))
		return nil
	})
}
