module example.com/standin/bare

go 1.22
