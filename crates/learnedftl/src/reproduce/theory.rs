//! Analytic write amplification of garbage collection under uniform random writes: the
//! oracle `reproduce theory` and `tests/theory.rs` hold the simulator to (docs/reproduction.md
//! "Theory as an oracle").
//!
//! Desnoyers (SYSTOR'12, "Analytic modeling of SSD write performance") models a device of `T`
//! physical pages holding `U` logical ones, written by independent uniform random page writes
//! (fio's `norandommap`), cleaned one erase unit at a time. With `α = T / U`:
//!
//! * **FIFO** cleaning (the oldest unit first): `A = α / (α + W₀(−α e^(−α)))`, `W₀` the
//!   principal branch of the Lambert W function;
//! * **greedy** cleaning (the unit with the fewest valid pages): approximately the FIFO value at
//!   `kα`, divided by `k`, with `k = 1 + 1 / (2 · pages per erase unit)`.
//!
//! Our GC cleans lines (one block on every LUN and plane), so the erase unit of the model is
//! the line: a device of one LUN and one plane makes the line one block.

/// The theory oracle's device (`reproduce theory`): one LUN and one plane, so that a line, our
/// GC's erase unit, is one block of 64 pages, and 4,096 of them whatever the preset.
pub const THEORY_UNITS: u32 = 4096;

/// The spare factors the theory oracle checks ((physical − logical) ÷ physical pages).
pub const THEORY_SPARE: [f64; 6] = [0.05, 0.07, 0.10, 0.20, 0.30, 0.50];

/// The principal branch of the Lambert W function, `W₀(x)` for `x ≥ −1/e`: the `w ≥ −1` with
/// `w eᵂ = x` (Halley's iteration, to machine precision). `NaN` below `−1/e`.
pub fn lambert_w0(x: f64) -> f64 {
    let branch_point = -(-1.0f64).exp();
    if x.is_nan() || x < branch_point {
        return f64::NAN;
    }
    if x == branch_point {
        return -1.0;
    }
    // A start near the branch point (its series) or from log1p elsewhere.
    let mut w = if x < -0.25 {
        let p = (2.0 * (1.0 + std::f64::consts::E * x)).sqrt();
        -1.0 + p - p * p / 3.0
    } else {
        x.ln_1p()
    };
    for _ in 0..64 {
        let e = w.exp();
        let f = w * e - x;
        let step = f / (e * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        w -= step;
        if step.abs() <= 1e-15 * (1.0 + w.abs()) {
            break;
        }
    }
    w
}

/// FIFO cleaning's write amplification at `alpha` = physical ÷ logical pages (> 1).
pub fn fifo_waf(alpha: f64) -> f64 {
    alpha / (alpha + lambert_w0(-alpha * (-alpha).exp()))
}

/// Greedy cleaning's write amplification at `alpha` = physical ÷ logical pages (> 1), with
/// erase units of `pages_per_unit` pages.
pub fn greedy_waf(alpha: f64, pages_per_unit: u32) -> f64 {
    let k = 1.0 + 1.0 / (2.0 * pages_per_unit as f64);
    fifo_waf(k * alpha) / k
}

/// `alpha` of a spare factor `sf` = (physical − logical) ÷ physical pages.
pub fn alpha_of_spare(sf: f64) -> f64 {
    1.0 / (1.0 - sf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambert_w0_inverts_w_exp_w() {
        for x in [-0.367_879, -0.3, -0.1, 0.0, 0.5, 1.0, 10.0] {
            let w = lambert_w0(x);
            assert!((w * w.exp() - x).abs() < 1e-12, "{x}: {w}");
            assert!(w >= -1.0);
        }
        assert_eq!(lambert_w0(-(-1.0f64).exp()), -1.0);
        assert!(lambert_w0(-0.5).is_nan());
        // W₀(1) is the omega constant.
        assert!((lambert_w0(1.0) - 0.567_143_290_409_783_8).abs() < 1e-15);
    }

    /// The model's values at the spare factors the oracle uses (computed independently).
    #[test]
    fn desnoyers_values() {
        let cases = [
            (0.05, 10.1724, 8.8206),
            (0.10, 5.1787, 4.8159),
            (0.30, 1.8762, 1.8332),
            (0.50, 1.2550, 1.2387),
        ];
        for (sf, fifo, greedy) in cases {
            let a = alpha_of_spare(sf);
            assert!((fifo_waf(a) - fifo).abs() < 1e-4, "{sf}: {}", fifo_waf(a));
            assert!((greedy_waf(a, 64) - greedy).abs() < 1e-4, "{sf}");
        }
        // More spare, less amplification; greedy never worse than FIFO.
        assert!(fifo_waf(1.5) < fifo_waf(1.2));
        assert!(greedy_waf(1.2, 64) < fifo_waf(1.2));
    }
}
