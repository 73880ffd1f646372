# The simulator's GEMM efficiency (sim/src/compute_model.cc, matmul_quantization_efficiency and
# chip_beside_communication), restated for the bench scripts that hold it against measurements:
# tiles of tile_m x tile_n stepping tile_k through K in whole waves over the compute units
# (split-K where the tiles are fewer than the units), or with stream-K the K iterations of all
# tiles dealt evenly over the units; each tile or piece pays a fixed fill of k_overhead K elements.
# Beside a communication kernel the library does not know of, it still plans for `planned` units
# while `units` are free. The chip's matmul_power_cap, where it has one, bounds the result.


def cdiv(a, b):
    return (a + b - 1) // b


def tile_for(dim, tile):
    """The tile side a library picks for a dimension shorter than the default tile."""
    if dim >= tile:
        return tile
    t = 16
    while t < dim:
        t *= 2
    return min(t, tile)


def efficiency(chip, m, n, k, k_overhead, stream_k, units=None, planned=None):
    units = units or chip["compute_units"]
    planned = max(planned or units, units)
    tm, tn = tile_for(m, chip["tile_m"]), tile_for(n, chip["tile_n"])
    tiles = cdiv(m, tm) * cdiv(n, tn)
    ksteps = cdiv(k, chip["tile_k"])
    if stream_k:
        if planned > units:
            # whole waves' tiles shared by the free units, the partial wave's shares in rounds
            whole = tiles // planned * planned
            rest = tiles - whole
            per_unit = cdiv(whole * ksteps, units) + (cdiv(planned, units) * cdiv(rest * ksteps, planned)
                                                      if rest else 0)
        else:
            per_unit = cdiv(tiles * ksteps, units)
        padded = per_unit * units * tm * tn * chip["tile_k"]
        pieces = max(1, planned // tiles) if tiles < planned else 1
        piece_k = cdiv(ksteps, pieces) * chip["tile_k"]
        return min(1.0, m * n * k / padded) * piece_k / (piece_k + k_overhead)
    split = max(1, min(planned // tiles, ksteps)) if tiles < planned else 1
    waves = cdiv(tiles * split, units)
    tile_k = cdiv(ksteps, split) * chip["tile_k"]
    padded = waves * units * tm * tn * tile_k
    return min(1.0, m * n * k / padded) * tile_k / (tile_k + k_overhead)


def flop_s(chip, m, n, k, fp8=False, stream_k=False, held=0, planned_for_all=True):
    """The FLOP term of a GEMM's time (no launch, no bytes term), alone (held 0) or beside a kernel
    that holds `held` SMs."""
    peak = chip["fp8_flops_per_s"] if fp8 else chip["bf16_flops_per_s"]
    e = chip["fp8_matmul_efficiency"] if fp8 else chip["matmul_efficiency"]
    k_overhead = chip["matmul_k_overhead"] * peak / chip["bf16_flops_per_s"]
    units = chip["compute_units"] - held
    planned = chip["compute_units"] if planned_for_all else units
    left = units / chip["compute_units"]
    cap = chip.get("matmul_power_cap", 1.0)  # the power limit's ceiling, any shape (compute_model.cc)
    return 2 * m * n * k / (peak * left * min(e * efficiency(chip, m, n, k, k_overhead, stream_k, units, planned), cap))
