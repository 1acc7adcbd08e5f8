package jsonschema

import (
	"testing"
)

// benchSchema is a 15-property tool schema touching most keywords.
const benchSchema = `{
	"type": "object",
	"additionalProperties": false,
	"required": ["orderId", "customerEmail", "createdAt", "currency", "lines", "total"],
	"properties": {
		"orderId":       {"type": "string", "format": "uuid"},
		"customerEmail": {"type": "string", "format": "email"},
		"customerName":  {"type": "string", "minLength": 1, "maxLength": 80},
		"createdAt":     {"type": "string", "format": "date-time"},
		"deliveryDate":  {"type": "string", "format": "date"},
		"currency":      {"enum": ["CNY", "USD", "EUR"]},
		"priority":      {"type": "integer", "minimum": 0, "maximum": 5},
		"total":         {"type": "number", "exclusiveMinimum": 0},
		"discount":      {"type": "number", "minimum": 0, "maximum": 1},
		"giftWrap":      {"type": "boolean"},
		"note":          {"type": ["string", "null"], "maxLength": 200},
		"callbackUrl":   {"type": "string", "format": "uri"},
		"couponCode":    {"type": "string", "pattern": "^[A-Z0-9]{6,12}$"},
		"address": {
			"type": "object",
			"required": ["city", "street"],
			"properties": {
				"city":   {"type": "string"},
				"street": {"type": "string"},
				"zip":    {"type": "string", "pattern": "^[0-9]{6}$"}
			}
		},
		"lines": {
			"type": "array",
			"minItems": 1,
			"maxItems": 50,
			"items": {
				"type": "object",
				"additionalProperties": false,
				"required": ["goodsCode", "qty"],
				"properties": {
					"goodsCode": {"type": "string", "minLength": 4},
					"qty":       {"type": "integer", "minimum": 1},
					"price":     {"type": "number", "minimum": 0}
				}
			}
		}
	}
}`

// benchDoc is a valid ~1 KB document for benchSchema.
const benchDoc = `{
	"orderId": "3f2c8a1e-9b7d-4c55-8e21-0a6b4d9f7c13",
	"customerEmail": "li.wei+orders@example.com",
	"customerName": "李伟 (Li Wei)",
	"createdAt": "2026-03-14T09:26:53.589+08:00",
	"deliveryDate": "2026-03-18",
	"currency": "CNY",
	"priority": 2,
	"total": 1288.50,
	"discount": 0.15,
	"giftWrap": true,
	"note": "Please call before delivery; leave with the building reception if nobody answers the door.",
	"callbackUrl": "https://hooks.example.com/orders/callback?tenant=acme&sig=a1b2c3",
	"couponCode": "SPRING2026",
	"address": {"city": "Hangzhou", "street": "No. 969 Wenyi West Road, Yuhang District", "zip": "311121"},
	"lines": [
		{"goodsCode": "SKU-10021", "qty": 2, "price": 199.00},
		{"goodsCode": "SKU-20458", "qty": 1, "price": 459.50},
		{"goodsCode": "SKU-30877", "qty": 3, "price": 89.90},
		{"goodsCode": "SKU-41230", "qty": 1, "price": 161.30},
		{"goodsCode": "SKU-52004", "qty": 4, "price": 12.00},
		{"goodsCode": "SKU-60019", "qty": 1, "price": 0}
	]
}`

func TestBenchDocValid(t *testing.T) {
	t.Parallel()
	s := MustCompile(benchSchema)
	if errs := s.Validate([]byte(benchDoc)); errs != nil {
		t.Fatalf("bench document invalid: %v", errs)
	}
}

func BenchmarkValidate(b *testing.B) {
	s := MustCompile(benchSchema)
	doc := []byte(benchDoc)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if errs := s.Validate(doc); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkValidateErrors(b *testing.B) {
	s := MustCompile(benchSchema)
	doc := []byte(`{"orderId":"x","customerEmail":"nope","currency":"JPY","priority":9,"total":0,"lines":[{"qty":0}],"extra":1}`)
	b.ReportAllocs()
	for b.Loop() {
		if errs := s.Validate(doc); len(errs) == 0 {
			b.Fatal("expected errors")
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	schema := []byte(benchSchema)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(schema); err != nil {
			b.Fatal(err)
		}
	}
}
