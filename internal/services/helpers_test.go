package services

import "github.com/tidwall/gjson"

func gjsonGet(b []byte, p string) gjson.Result { return gjson.GetBytes(b, p) }
