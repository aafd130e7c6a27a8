# statements must be inside 'pipeline NAME { ... }'
in  A : bf16[64]
out B : bf16[64]
B = relu(A)
