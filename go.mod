module goldtrace

go 1.26

require (
	codeberg.org/sbinet/npyio v0.14.0
	github.com/spf13/pflag v1.1.0
	gonum.org/v1/gonum v0.17.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/nlpodyssey/gopickle v0.3.0 // indirect
	golang.org/x/text v0.34.0 // indirect
)
