//! Print a raw chase sweep (pages, chase ns, baseline ns) for a backing: a development aid.
//! `cargo run --release --example raw_sweep -p mmulab-probe -- [4k|thp|thp2m] [max]`
use mmulab_probe::target::{native::NativeTarget, Backing, Stride, Target};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (backing, stride) = match a.get(1).map(|s| s.as_str()) {
        Some("thp") => (Backing::Thp, Stride::Page4K),
        Some("thp2m") => (Backing::Thp, Stride::Page2M),
        _ => (Backing::Base, Stride::Page4K),
    };
    let max: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(8192);
    let mut t = NativeTarget::new(true);
    let vb = t.map(backing, stride, max, 1).unwrap();
    eprintln!("{vb:?}");
    let mut n = 4usize;
    let mut f = 4.0f64;
    while n <= max {
        let m = t.measure(n, 100_000, n as u64).unwrap();
        println!("{n:6} {:7.2} {:7.2} {:7.2}", m.chase, m.baseline, m.chase - m.baseline);
        f *= 2f64.powf(0.25);
        n = (f.round() as usize).max(n + 1);
    }
}
