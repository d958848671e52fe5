module gosort

go 1.25.0
