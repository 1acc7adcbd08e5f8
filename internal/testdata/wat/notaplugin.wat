;; A valid module that exports neither Warden ABI.
(module
  (memory (export "memory") 1)
  (func (export "hello")))
