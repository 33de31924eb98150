//! Kubernetes resource quantities (`5Gi`, `100M`, `500m`, `1e3`), compared numerically and written in
//! Kubernetes' canonical form (`2048Mi` → `2Gi`, `1000M` → `1G`).
//!
//! The value is held exactly in nano-units (the smallest unit Kubernetes keeps; finer fractions round
//! up), which covers every size a dogu volume or a proxy body can have.

use std::cmp::Ordering;
use std::fmt;

use crate::problem::Problem;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantityFormat {
    /// `Ki`, `Mi`, `Gi`, ...
    BinarySI,
    /// No suffix or `n`, `u`, `m`, `k`, `M`, `G`, ...
    DecimalSI,
    /// `1e3`
    DecimalExponent,
}

#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    nanos: i128,
    format: QuantityFormat,
}

const NANOS_PER_UNIT: i128 = 1_000_000_000;
const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

impl Quantity {
    pub const ZERO: Quantity = Quantity { nanos: 0, format: QuantityFormat::DecimalSI };

    pub fn parse(text: &str) -> Result<Self, Problem> {
        parse(text).ok_or_else(|| {
            Problem::new(format!(
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text:?}"
            ))
        })
    }

    pub fn format(&self) -> QuantityFormat {
        self.format
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// The value, when it is a whole number (`64Mi` → 67108864; `1.5` → `None`).
    pub fn whole(&self) -> Option<i128> {
        (self.nanos % NANOS_PER_UNIT == 0).then_some(self.nanos / NANOS_PER_UNIT)
    }

    /// Kubernetes' canonical text of this quantity.
    pub fn canonical(&self) -> String {
        if self.nanos == 0 {
            return "0".to_owned();
        }
        let sign = if self.nanos < 0 { "-" } else { "" };
        let magnitude = self.nanos.unsigned_abs();
        let whole_units = magnitude.is_multiple_of(NANOS_PER_UNIT as u128);
        if self.format == QuantityFormat::BinarySI && whole_units && magnitude >= 1024 * NANOS_PER_UNIT as u128 {
            let mut value = magnitude / NANOS_PER_UNIT as u128;
            let mut exponent = 0;
            while exponent < BINARY_SUFFIXES.len() - 1 && value.is_multiple_of(1024) {
                value /= 1024;
                exponent += 1;
            }
            return format!("{sign}{value}{}", BINARY_SUFFIXES[exponent]);
        }
        let mut mantissa = magnitude;
        let mut exponent: i32 = -9;
        while mantissa.is_multiple_of(10) {
            mantissa /= 10;
            exponent += 1;
        }
        let extra = exponent.rem_euclid(3);
        mantissa *= 10u128.pow(extra as u32);
        exponent -= extra;
        if self.format == QuantityFormat::DecimalExponent {
            return if exponent == 0 { format!("{sign}{mantissa}") } else { format!("{sign}{mantissa}e{exponent}") };
        }
        if exponent > 18 {
            mantissa *= 10u128.pow((exponent - 18) as u32);
            exponent = 18;
        }
        let suffix = match exponent {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            0 => "",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            _ => "E",
        };
        format!("{sign}{mantissa}{suffix}")
    }
}

fn parse(text: &str) -> Option<Quantity> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'+' => (false, &text[1..]),
        b'-' => (true, &text[1..]),
        _ => (false, text),
    };
    let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
        return None;
    }
    // value = digits * 10^(decimal_exponent) * 1024^binary_exponent
    let (format, decimal_exponent, binary_exponent): (QuantityFormat, i32, u32) = match suffix {
        "" => (QuantityFormat::DecimalSI, 0, 0),
        "n" => (QuantityFormat::DecimalSI, -9, 0),
        "u" => (QuantityFormat::DecimalSI, -6, 0),
        "m" => (QuantityFormat::DecimalSI, -3, 0),
        "k" => (QuantityFormat::DecimalSI, 3, 0),
        "M" => (QuantityFormat::DecimalSI, 6, 0),
        "G" => (QuantityFormat::DecimalSI, 9, 0),
        "T" => (QuantityFormat::DecimalSI, 12, 0),
        "P" => (QuantityFormat::DecimalSI, 15, 0),
        "E" => (QuantityFormat::DecimalSI, 18, 0),
        "Ki" => (QuantityFormat::BinarySI, 0, 1),
        "Mi" => (QuantityFormat::BinarySI, 0, 2),
        "Gi" => (QuantityFormat::BinarySI, 0, 3),
        "Ti" => (QuantityFormat::BinarySI, 0, 4),
        "Pi" => (QuantityFormat::BinarySI, 0, 5),
        "Ei" => (QuantityFormat::BinarySI, 0, 6),
        exp if exp.starts_with(['e', 'E']) => {
            let digits = &exp[1..];
            let body = digits.strip_prefix(['+', '-']).unwrap_or(digits);
            if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) || body.len() > 3 {
                return None;
            }
            (QuantityFormat::DecimalExponent, digits.parse().ok()?, 0)
        }
        _ => return None,
    };
    let digits: String = [int_part, frac_part].concat();
    let digits = digits.trim_start_matches('0');
    if digits.len() > 30 {
        return None;
    }
    let mantissa: i128 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    let power_of_ten = decimal_exponent + 9 - frac_part.len() as i32;
    let mut nanos = mantissa.checked_mul(1024i128.checked_pow(binary_exponent)?)?;
    if power_of_ten >= 0 {
        nanos = nanos.checked_mul(10i128.checked_pow(power_of_ten as u32)?)?;
    } else {
        // Below a nano-unit Kubernetes rounds up.
        let divisor = 10i128.checked_pow(power_of_ten.unsigned_abs())?;
        nanos = (nanos + divisor - 1) / divisor;
    }
    Some(Quantity { nanos: if negative { -nanos } else { nanos }, format })
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn canonical_forms_match_kubernetes() {
        for (input, canonical) in [
            ("2048Mi", "2Gi"),
            ("1000M", "1G"),
            ("100M", "100M"),
            ("5Gi", "5Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("1Ki", "1Ki"),
            ("512", "512"),
            ("1024", "1024"),
            ("0.5", "500m"),
            ("0", "0"),
            ("0Mi", "0"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("1500m", "1500m"),
            ("10M", "10M"),
            ("1k", "1k"),
            ("+3G", "3G"),
            ("-2Gi", "-2Gi"),
            ("0.1n", "1n"),
        ] {
            assert_eq!(q(input).canonical(), canonical, "{input}");
        }
    }

    #[test]
    fn compares_numerically_across_suffixes() {
        assert_eq!(q("1Gi"), q("1024Mi"));
        assert!(q("100M") > q("10M"));
        assert!(q("2Gi") > q("2G"));
        assert_eq!(q("1000m"), q("1"));
    }

    #[test]
    fn knows_the_format_of_what_was_written() {
        assert_eq!(q("1Mi").format(), QuantityFormat::BinarySI);
        assert_eq!(q("1M").format(), QuantityFormat::DecimalSI);
        assert_eq!(q("100").format(), QuantityFormat::DecimalSI);
        assert_eq!(q("1e6").format(), QuantityFormat::DecimalExponent);
    }

    #[test]
    fn rejects_malformed_text() {
        for bad in ["", "1K", "abc", "1.2.3", "Gi", "1Gb", "--1", "1e", ".", "1e1000"] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
    }
}
