# an integer literal that does not fit in 64 bits
pipeline p {
  param M = 123456789012345678901234567890
}
