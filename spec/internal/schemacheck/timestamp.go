package schemacheck

// isDateTimeZ reports whether s is a date-time the library's date-time
// format accepts, in the only form the checker knows:
// YYYY-MM-DD, T or t, hh:mm:ss, an optional fraction, Z, with the date valid
// (as time.Parse checks it) and no leap second. Offsets and a lowercase z,
// which the format accepts too, are left to the library.
func isDateTimeZ(s string) bool {
	if len(s) < 20 || s[len(s)-1] != 'Z' {
		return false
	}
	if !digits(s[0:4]) || s[4] != '-' || !digits(s[5:7]) || s[7] != '-' || !digits(s[8:10]) ||
		(s[10] != 'T' && s[10] != 't') ||
		!digits(s[11:13]) || s[13] != ':' || !digits(s[14:16]) || s[16] != ':' || !digits(s[17:19]) {
		return false
	}
	if rest := s[19 : len(s)-1]; rest != "" && (rest[0] != '.' || len(rest) < 2 || !digits(rest[1:])) {
		return false
	}
	year, month, day := num(s[0:4]), num(s[5:7]), num(s[8:10])
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
		return false
	}
	return num(s[11:13]) <= 23 && num(s[14:16]) <= 59 && num(s[17:19]) <= 59
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func num(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// The patterns of common.json's timestamp and timestampMillis, matched by
// hand: a regular expression costs more than the rest of a record's check.
// TestTimestampPatternMatchers checks them against regexp.
const (
	timestampPattern       = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](\.[0-9]{1,9})?Z$`
	timestampMillisPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9]\.[0-9]{3}Z$`
)

func matchTimestamp(s string) bool {
	if len(s) < 20 || !timestampPrefix(s) || s[len(s)-1] != 'Z' {
		return false
	}
	frac := s[19 : len(s)-1]
	return frac == "" || frac[0] == '.' && len(frac) >= 2 && len(frac) <= 10 && digits(frac[1:])
}

func matchTimestampMillis(s string) bool {
	return len(s) == 24 && timestampPrefix(s) && s[19] == '.' && digits(s[20:23]) && s[23] == 'Z'
}

// timestampPrefix matches [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9]
// at the start of s, which has at least 19 bytes.
func timestampPrefix(s string) bool {
	return digits(s[0:4]) && s[4] == '-' && digits(s[5:7]) && s[7] == '-' && digits(s[8:10]) && s[10] == 'T' &&
		digits(s[11:13]) && s[13] == ':' && digits(s[14:16]) && s[16] == ':' && s[17] >= '0' && s[17] <= '5' && digits(s[18:19])
}
