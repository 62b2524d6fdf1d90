package reqcheck

import "testing"

func TestFieldOf(t *testing.T) {
	for _, c := range []struct{ ptr, field, where string }{
		{"", "body", ""},
		{"/title", "title", ""},
		{"/trigger/pattern", "trigger.pattern", ""},
		{"/usedBy/2", "usedBy", "item 2"},
		{"/trigger/values/10", "trigger.values", "item 10"},
		{"/a~1b~0c", "a/b~c", ""},
		{"/0", "0", ""},
		{"/", `""`, ""},
	} {
		t.Run(c.ptr, func(t *testing.T) {
			field, where := fieldOf(c.ptr)
			if field != c.field || where != c.where {
				t.Errorf("fieldOf(%q) = %q, %q; want %q, %q", c.ptr, field, where, c.field, c.where)
			}
		})
	}
}
