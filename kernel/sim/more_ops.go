package sim

func registerMoreOps() {}
