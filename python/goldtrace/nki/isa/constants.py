"""neuronxcc.nki.isa.constants: the ISA's enumerations."""

import enum


class engine(enum.Enum):
    """The engine an instruction runs on."""

    unknown = 0
    tensor = 1
    vector = 2
    scalar = 3
    gpsimd = 4
    sync = 5
    activation = 3


class reduce_cmd(enum.Enum):
    """Commands for an engine's accumulator registers (one float32 per
    partition lane) in activation, range_select and select_reduce; numbered as
    in the NKI stubs."""

    idle = 0  # registers untouched (reduce_res, if given, receives this instruction's reduction)
    reset = 1  # registers = 0
    reduce = 2  # registers = reduce_op(registers, this instruction's reduction)
    reset_reduce = 3  # registers = this instruction's reduction


class dge_mode(enum.Enum):
    """Descriptor-generation modes of dma_copy."""

    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.Enum):
    """What a DMA does with an out-of-bounds dynamic index."""

    error = 0
    skip = 1


class nc_version(enum.Enum):
    """NeuronCore generations."""

    gen2 = 2
    gen3 = 3
    gen4 = 4
