// Package money keeps US dollar amounts exactly, as whole micro-dollars, so
// sums over thousands of ledger rows come out to the cent a person checks.
package money

import (
	"database/sql/driver"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// USD is an amount of US dollars in micro-dollars (10⁻⁶ USD).
type USD int64

// Dollar is one US dollar.
const Dollar USD = 1_000_000

// Parse reads a decimal dollar amount such as "2.50" or "-0.000001"; more
// than six decimals is an error rather than a silent rounding.
func Parse(s string) (USD, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "$")
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if whole == "" && frac == "" || len(frac) > 6 || strings.ContainsAny(whole+frac, "+-eE") {
		return 0, fmt.Errorf("parse dollar amount %q: want digits with at most six decimals", s)
	}
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/int64(Dollar) {
		return 0, fmt.Errorf("parse dollar amount %q: not a number or too large", s)
	}
	var f int64
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil {
			return 0, fmt.Errorf("parse dollar amount %q: %w", s, err)
		}
	}
	v := USD(w)*Dollar + USD(f)
	if neg {
		v = -v
	}
	return v, nil
}

// FromFloat converts a float dollar amount, rounding to the micro-dollar;
// for inputs that are floats by nature (YAML seed files).
func FromFloat(f float64) USD { return USD(math.Round(f * float64(Dollar))) }

// Decimal is the exact amount in dollars with six decimals: "0.533333".
func (u USD) Decimal() string {
	sign, a := "", int64(u)
	if a < 0 {
		sign, a = "-", -a
	}
	return fmt.Sprintf("%s%d.%06d", sign, a/int64(Dollar), a%int64(Dollar))
}

// String is the amount as a person reads it, to the cent: "$0.53".
func (u USD) String() string {
	cents := u.roundTo(10_000)
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
}

// roundTo divides by unit rounding half away from zero.
func (u USD) roundTo(unit int64) int64 {
	v := int64(u)
	if v < 0 {
		return -((-v + unit/2) / unit)
	}
	return (v + unit/2) / unit
}

// Scale multiplies by a fraction (a share of idle time, say), rounding to
// the micro-dollar.
func (u USD) Scale(f float64) USD { return USD(math.Round(float64(u) * f)) }

// Float is the amount in dollars as a float, for charts only.
func (u USD) Float() float64 { return float64(u) / float64(Dollar) }

// For is the cost of units (GPUs or slices) held for d at u per unit-hour,
// rounded to the micro-dollar; exact for any run length.
func (u USD) For(units int64, d time.Duration) USD {
	var n big.Int
	n.Mul(big.NewInt(int64(u)), big.NewInt(units))
	n.Mul(&n, big.NewInt(int64(d)))
	return roundDiv(&n, big.NewInt(int64(time.Hour)))
}

func roundDiv(n, d *big.Int) USD {
	var q, r big.Int
	q.QuoRem(n, d, &r)
	r.Abs(&r).Mul(&r, big.NewInt(2))
	if r.Cmp(d) >= 0 {
		if n.Sign() < 0 {
			q.Sub(&q, big.NewInt(1))
		} else {
			q.Add(&q, big.NewInt(1))
		}
	}
	return USD(q.Int64())
}

// Scan reads a NUMERIC column exactly.
func (u *USD) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case nil:
		*u = 0
		return nil
	case []byte:
		s = string(v)
	case string:
		s = v
	case int64:
		*u = USD(v) * Dollar
		return nil
	case float64:
		*u = FromFloat(v)
		return nil
	default:
		return fmt.Errorf("scan dollar amount from %T", src)
	}
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// Value writes the exact decimal to a NUMERIC column.
func (u USD) Value() (driver.Value, error) { return u.Decimal(), nil }

// MarshalJSON writes dollars as an exact JSON number: 0.533333.
func (u USD) MarshalJSON() ([]byte, error) { return []byte(u.Decimal()), nil }

// UnmarshalJSON reads a JSON number or string of dollars.
func (u *USD) UnmarshalJSON(b []byte) error {
	v, err := Parse(strings.Trim(string(b), `"`))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// MulDiv is u × num / den rounded to the micro-dollar, exactly: a share of
// an amount ("$1,200 × 3 GPU-hours / 7 GPU-hours") or a cost per a
// fraction of a unit. It panics when den is zero.
func (u USD) MulDiv(num, den int64) USD {
	var n big.Int
	n.Mul(big.NewInt(int64(u)), big.NewInt(num))
	d := big.NewInt(den)
	if den < 0 {
		n.Neg(&n)
		d.Neg(d)
	}
	return roundDiv(&n, d)
}
