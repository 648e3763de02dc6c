module example.com/standin/errdefs

go 1.22
