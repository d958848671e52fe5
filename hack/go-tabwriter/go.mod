module gotabwriter

go 1.25.0
