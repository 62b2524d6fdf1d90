package org

// DataCategory is a kind of data an instruction protects, named for people;
// its ID is what the organisation API's categoryId holds. The ids are
// fixed: the same in every service and every release.
type DataCategory struct {
	ID, Name, Description string
}

var dataCategories = []DataCategory{
	{"8d213df4-5afb-40eb-bc84-dd649af1f8c9", "Personal data", "names, contact details and other data about a person"},
	{"4dcd570b-cdf0-4faf-9913-d4722ca3b48c", "Sensitive personal data", "health, beliefs, ethnicity, sexual orientation, union membership, biometrics"},
	{"997b3ec5-b0c2-434e-841d-261da078bfd8", "Financial data", "card and bank account numbers, payroll, transactions"},
	{"72c33e9e-dec8-4d8f-9a68-b7ed268fe51a", "Credentials and secrets", "passwords, API keys, access tokens, private keys"},
	{"a8bb0fc4-b11d-49c9-b904-6c4e3b7c5f8c", "Source code", "the organisation's code and configuration"},
	{"4935dfd2-19d7-4fdd-85c3-44531df91d0f", "Confidential business information", "plans, deals, unreleased products, internal figures"},
	{"12cc22c7-cc28-4bc5-b7d9-b0a2d89d6cad", "Customer data", "what customers entrusted to the organisation"},
}

// DataCategories returns the data categories an instruction's categoryId
// may name by choice in the dashboard, in the order shown. The organisation
// API accepts any UUID as categoryId; these are the ones with a name.
func DataCategories() []DataCategory {
	return append([]DataCategory(nil), dataCategories...)
}

// DataCategoryName returns the name of the data category id (lower case),
// and false for an id that is none of [DataCategories].
func DataCategoryName(id string) (string, bool) {
	for _, c := range dataCategories {
		if c.ID == id {
			return c.Name, true
		}
	}
	return "", false
}
