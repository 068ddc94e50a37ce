package hlo

import "fmt"

// EffectiveComparisonType is the comparison type a compare instruction asks
// for, whichever way the text spelled it: type=FLOAT|TOTALORDER|SIGNED|UNSIGNED
// (older XLA, still accepted by the newest) or order=TOTAL|PARTIAL (newer
// XLA's Comparison::Order). It returns "" when neither is given (the
// default for the operand type), and an error for an order the type cannot
// have, for order=WEAK (whose float semantics XLA does not document), and
// for a type and an order that disagree.
func (in *Instruction) EffectiveComparisonType() (string, error) {
	isFloat := false
	if len(in.Operands) > 0 {
		t := in.Operands[0].Shape.Elem
		isFloat = t.IsFloat() || t.IsComplex()
	}
	fromOrder := ""
	switch in.ComparisonOrder {
	case "":
	case "TOTAL":
		if isFloat {
			fromOrder = "TOTALORDER"
		}
	case "PARTIAL":
		if !isFloat {
			return "", fmt.Errorf("order=PARTIAL on a non-float comparison")
		}
		fromOrder = "FLOAT"
	case "WEAK":
		return "", fmt.Errorf("comparison order WEAK")
	default:
		return "", fmt.Errorf("comparison order %q", in.ComparisonOrder)
	}
	switch in.ComparisonType {
	case "", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED":
	default:
		return "", fmt.Errorf("comparison type %q", in.ComparisonType)
	}
	if in.ComparisonType != "" && in.ComparisonOrder != "" {
		want := fromOrder
		if want == "" { // TOTAL on integers
			if in.ComparisonType != "SIGNED" && in.ComparisonType != "UNSIGNED" {
				return "", fmt.Errorf("type=%s disagrees with order=%s", in.ComparisonType, in.ComparisonOrder)
			}
			return in.ComparisonType, nil
		}
		if want != in.ComparisonType {
			return "", fmt.Errorf("type=%s disagrees with order=%s", in.ComparisonType, in.ComparisonOrder)
		}
	}
	if in.ComparisonType != "" {
		return in.ComparisonType, nil
	}
	return fromOrder, nil
}
