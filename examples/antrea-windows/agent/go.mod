module example.com/antrea

go 1.22
